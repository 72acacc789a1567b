/**
 * The genesis document: chain id, start time, params, initial accounts and balances, validators with their
 * owners and consensus keys, the pinned model and codec (`null` on a chain without them), and the kernels'
 * conformance vectors every genesis pins (`genesis/conformance.ts`, PROTOCOL §10.6). Its identity is `id(genesis)`; a node refuses state created from another genesis.
 *
 * `params` are the lifecycle params of `workflows/params.ts` (checked there, exact names); `consensus` holds the
 * engine params the lifecycles do not read (epoch length, block byte bound, block interval).
 */
import { canonical, isObject, type JsonValue } from "../core/canonical.ts";
import { VECTORS_FORMAT } from "../kernels/conformance.ts";
import { checkParams, type WorkflowParams } from "../workflows/params.ts";
import { id } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { isAccountId } from "../ledger/keys.ts";
import { isConsensusPublicKey } from "../ledger/consensus_key.ts";
import { parseTrainingGenesis, type TrainingSetup } from "../ledger/training/genesis.ts";
import { type DataSetup, parseDataGenesis } from "../ledger/data/genesis.ts";

/** Consensus-engine params that are not lifecycle params (kept apart from `workflows/params.ts`). */
export interface ConsensusParams {
  /** Epoch boundaries are multiples of this height; bonds activate and unbonds take effect there. */
  readonly epoch_blocks: number;
  /** The canonical bytes of one block are at most this. */
  readonly max_block_bytes: number;
  /** The proposer makes a block every this many milliseconds (not part of any hash). */
  readonly block_interval_ms: number;
}

/** Everything the ledger reads as `env.params`: lifecycle params and consensus params. */
export type LedgerParams = WorkflowParams & ConsensusParams;

/** Defaults of the consensus params. */
export const DEFAULT_CONSENSUS: ConsensusParams = {
  epoch_blocks: 100,
  max_block_bytes: 8 * 1024 * 1024,
  block_interval_ms: 1_000,
};

/** One initial account. */
export interface GenesisAccount {
  readonly id: string;
  readonly balance: number;
}

/** One initial validator, active from height 0. */
export interface GenesisValidator {
  readonly owner: string;
  readonly consensus_key: string;
  readonly amount: number;
}

/** A parsed genesis document. */
export interface Genesis {
  readonly chain_id: string;
  /** Milliseconds since the Unix epoch; the time of height 0. */
  readonly genesis_time: number;
  /** The lifecycle params, exactly as `workflows/params.ts` defines them. */
  readonly params: WorkflowParams;
  /** The consensus params. */
  readonly consensus: ConsensusParams;
  readonly accounts: readonly GenesisAccount[];
  readonly validators: readonly GenesisValidator[];
  readonly model: JsonValue;
  readonly codec: JsonValue;
  /** The conformance vectors document (`format` `neuroshard-kernel-vectors-v1`) every role checks at startup. */
  readonly vectors: JsonValue;
  /**
   * The checked training setup from `model` (`{manifest, root}`) and the optional `training` field
   * (`{learning_rate, clip, batches}`), or null when the genesis has no training section.
   */
  readonly training: TrainingSetup | null;
  /**
   * The checked data lifecycle from the optional `data` field (`{sources, cursors, training_blocks}`,
   * `ledger/data/genesis.ts`), or null for a chain that trains on `training.batches` instead.
   */
  readonly data: DataSetup | null;
}

const KEYS = [
  "accounts",
  "chain_id",
  "codec",
  "consensus",
  "genesis_time",
  "model",
  "params",
  "validators",
  "vectors",
];

/** The canonical size bound of the `vectors` document (the pinned one is about 2 KiB). */
const MAX_VECTORS_BYTES = 16 * 1024;

/** Fields a genesis may omit (absent means null). */
const OPTIONAL_KEYS = ["training", "data"];

function bad(message: string): never {
  throw new ProtocolError("invalid_value", `Cannot use genesis: ${message}`);
}

function atoms(value: unknown, what: string, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    bad(`${what} is ${JSON.stringify(value)}, expected an integer >= ${min}`);
  }
  return value;
}

/** Checks a genesis value and returns it typed; `invalid_value` naming the first problem. */
export function parseGenesis(value: JsonValue): Genesis {
  if (!isObject(value)) bad("not an object");
  for (const k of Object.keys(value)) {
    if (!KEYS.includes(k) && !OPTIONAL_KEYS.includes(k)) bad(`unknown field ${k}`);
  }
  for (const k of KEYS) if (!Object.hasOwn(value, k)) bad(`missing field ${k}`);
  const v = value;
  if (typeof v.chain_id !== "string" || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(v.chain_id)) {
    bad(`chain_id is ${JSON.stringify(v.chain_id)}, expected 1-64 of [a-z0-9._-]`);
  }
  atoms(v.genesis_time, "genesis_time");
  if (!isObject(v.params)) bad("params is not an object");
  const checked = checkParams(v.params);
  if (!checked.ok) bad(checked.message);
  const params = checked.value;
  if (!isObject(v.consensus)) bad("consensus is not an object");
  const consensus = v.consensus;
  for (const k of Object.keys(consensus)) {
    if (!Object.hasOwn(DEFAULT_CONSENSUS, k)) bad(`unknown consensus.${k}`);
  }
  for (const k of Object.keys(DEFAULT_CONSENSUS)) {
    if (!Object.hasOwn(consensus, k)) bad(`missing consensus.${k}`);
    atoms(consensus[k], `consensus.${k}`, 1);
  }
  if (!Array.isArray(v.accounts)) bad("accounts is not an array");
  const seen = new Set<string>();
  let supply = 0;
  const accounts = v.accounts.map((a, i): GenesisAccount => {
    if (!isObject(a) || Object.keys(a).length !== 2 || !isAccountId(a.id)) {
      bad(`accounts[${i}] is not {id, balance}`);
    }
    if (seen.has(a.id as string)) bad(`accounts[${i}] repeats ${a.id}`);
    seen.add(a.id as string);
    supply += atoms(a.balance, `accounts[${i}].balance`);
    return { id: a.id as string, balance: a.balance as number };
  });
  if (!Array.isArray(v.validators) || v.validators.length === 0) bad("validators is not a non-empty array");
  const keys = new Set<string>();
  const validators = v.validators.map((x, i): GenesisValidator => {
    if (
      !isObject(x) || Object.keys(x).length !== 3 || !isAccountId(x.owner) ||
      !isConsensusPublicKey(x.consensus_key)
    ) {
      bad(`validators[${i}] is not {owner, consensus_key, amount}`);
    }
    if (keys.has(x.consensus_key as string)) bad(`validators[${i}] repeats consensus key ${x.consensus_key}`);
    keys.add(x.consensus_key as string);
    const amount = atoms(x.amount, `validators[${i}].amount`, 1);
    if (amount % (params.bond_unit as number) !== 0) {
      bad(`validators[${i}].amount is not a multiple of bond_unit`);
    }
    supply += amount;
    return { owner: x.owner as string, consensus_key: x.consensus_key as string, amount };
  });
  if (!Number.isSafeInteger(supply)) bad("the total supply is outside the safe range");
  if (!isObject(v.vectors) || v.vectors.format !== VECTORS_FORMAT) {
    bad(`vectors is ${canonical(v.vectors ?? null).slice(0, 80)}, expected a ${VECTORS_FORMAT} document`);
  }
  if (canonical(v.vectors).length > MAX_VECTORS_BYTES) {
    bad(`vectors is ${canonical(v.vectors).length} bytes, expected at most ${MAX_VECTORS_BYTES}`);
  }
  const training = parseTrainingGenesis(v.model ?? null, v.training ?? null, (v.data ?? null) !== null);
  const data = parseDataGenesis(v.data ?? null, training, v.codec ?? null);
  return {
    chain_id: v.chain_id,
    genesis_time: v.genesis_time as number,
    params,
    consensus: consensus as unknown as ConsensusParams,
    accounts,
    validators,
    model: v.model!,
    codec: v.codec!,
    vectors: v.vectors!,
    training,
    data,
  };
}

/** The genesis id: `id` of the document as written (before defaults are filled in). */
export function genesisId(value: JsonValue): string {
  return id(value);
}

/** The total supply at genesis: every balance plus every validator bond. */
export function genesisSupply(genesis: Genesis): number {
  let s = 0;
  for (const a of genesis.accounts) s += a.balance;
  for (const v of genesis.validators) s += v.amount;
  return s;
}
