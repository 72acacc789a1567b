/**
 * Builds the ledger part of a devnet: a genesis with `DEVNET_PARAMS`, and for each of N validators a home
 * directory holding its consensus key and its owner's account key (both 0600), plus a funded faucet account.
 * The homes can be passed to `deno task validator --home` as they are.
 *
 * The training part (`model`, `codec`, `training`, `data`, param overrides, extra accounts) is passed in by the caller (the devnet
 * task builds the model, codec and batches); `ledger/training/genesis.ts` checks it.
 *
 * Layout: `<out>/genesis.json`, `<out>/faucet/account.key`, `<out>/validator-<i>/{consensus.key, account.key}`
 */
import { canonical, type JsonObject, type JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS, type WorkflowParams } from "../workflows/params.ts";
import { createKeyFile } from "../ledger/keys.ts";
import { createConsensusKeyFile } from "../ledger/consensus_key.ts";
import { genesisId, parseGenesis } from "./schema.ts";
import { conformanceVectors } from "./conformance.ts";

/** Options of the devnet builder. */
export interface DevnetOptions {
  readonly out: string;
  readonly chainId?: string;
  readonly validators?: number;
  /**
   * Spare validator homes written after the genesis validators (`validator-<N>`, ...): keys and a funded
   * owner (20 NEURO) but no genesis bond, for bonding later (default 0).
   */
  readonly spares?: number;
  /** Genesis time in ms (defaults to now). */
  readonly time?: number;
  readonly blockIntervalMs?: number;
  /** The genesis `model` field, `{manifest, root}` (default null). */
  readonly model?: JsonValue;
  /** The genesis `codec` field, `{root, manifest}` (default null). */
  readonly codec?: JsonValue;
  /** The genesis `training` field, `{learning_rate, clip, batches}` (omitted when not given). */
  readonly training?: JsonValue;
  /**
   * The genesis `data` section `{sources, cursors, training_blocks}` (PROTOCOL §6; omitted when not given).
   * With it the chain trains only on activated cohorts, so `training.batches` must be empty.
   */
  readonly data?: JsonValue;
  /** Parameters that differ from `DEVNET_PARAMS` (e.g. a longer cohort schedule). */
  readonly params?: Partial<WorkflowParams>;
  /** Extra funded accounts (e.g. a sponsor, workers and a referee). */
  readonly accounts?: readonly { id: string; balance: number }[];
}

/** What the builder wrote. */
export interface DevnetResult {
  readonly genesisPath: string;
  readonly genesisId: string;
  /** Validator homes: the genesis validators first, then the spares. */
  readonly homes: string[];
  readonly faucet: string;
}

/** Writes a devnet genesis and its keys; refuses an `out` that already holds a genesis. */
export async function writeDevnetGenesis(options: DevnetOptions): Promise<DevnetResult> {
  const out = options.out.replace(/\/$/, "");
  const count = options.validators ?? 4;
  if (!Number.isSafeInteger(count) || count < 1 || count > 64) {
    throw new ProtocolError("invalid_value", `Cannot build devnet: validators is ${count}, expected 1 to 64`);
  }
  const genesisPath = `${out}/genesis.json`;
  try {
    await Deno.stat(genesisPath);
    throw new ProtocolError("key_exists", `Cannot build devnet: ${genesisPath} already exists`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  await Deno.mkdir(out, { recursive: true });
  const faucet = await createKeyFile(`${out}/faucet/account.key`);
  const homes: string[] = [];
  const accounts: JsonObject[] = [{ id: faucet.accountId, balance: 1_000_000 * ATOMS_PER_NEURO }];
  for (const a of options.accounts ?? []) accounts.push({ id: a.id, balance: a.balance });
  const validators: JsonObject[] = [];
  for (let i = 0; i < count; i++) {
    const home = `${out}/validator-${i}`;
    const consensus = await createConsensusKeyFile(`${home}/consensus.key`);
    const owner = await createKeyFile(`${home}/account.key`);
    accounts.push({ id: owner.accountId, balance: 10 * ATOMS_PER_NEURO });
    validators.push({
      owner: owner.accountId,
      consensus_key: consensus.publicKey,
      amount: 4 * DEVNET_PARAMS.bond_unit,
    });
    homes.push(home);
  }
  for (let i = count; i < count + (options.spares ?? 0); i++) {
    const home = `${out}/validator-${i}`;
    await createConsensusKeyFile(`${home}/consensus.key`);
    const owner = await createKeyFile(`${home}/account.key`);
    accounts.push({ id: owner.accountId, balance: 20 * ATOMS_PER_NEURO });
    homes.push(home);
  }
  const genesis: JsonObject = {
    chain_id: options.chainId ?? "neuroshard-devnet",
    genesis_time: options.time ?? Date.now(),
    params: { ...DEVNET_PARAMS, ...options.params },
    consensus: {
      epoch_blocks: 10,
      max_block_bytes: 8 * 1024 * 1024,
      block_interval_ms: options.blockIntervalMs ?? 1_000,
    },
    accounts,
    validators,
    model: options.model ?? null,
    codec: options.codec ?? null,
    vectors: conformanceVectors(),
    ...(options.training === undefined ? {} : { training: options.training }),
    ...(options.data === undefined ? {} : { data: options.data }),
  };
  parseGenesis(genesis);
  await Deno.writeTextFile(genesisPath, canonical(genesis) + "\n");
  return { genesisPath, genesisId: genesisId(genesis), homes, faucet: `${out}/faucet/account.key` };
}
