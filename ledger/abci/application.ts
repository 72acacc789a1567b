/**
 * The ledger as an ABCI 2.0 application (CometBFT 0.38). It maps each request onto `LedgerApp` without
 * changing a rule:
 *
 * - `Info`: the last committed height and app hash (CometBFT's handshake replays the blocks after it).
 * - `InitChain`: checks the chain id, the initial height (1), the genesis id in `app_state` and that the
 *   validator set equals ours; answers our height-0 app hash and validator set.
 * - `CheckTx` (new and recheck): decodes and executes against a projection of the committed state (reset
 *   at each commit; CometBFT then rechecks the remaining mempool in order).
 * - `PrepareProposal`: keeps, in order, transactions that decode and verify, within `max_tx_bytes` and our
 *   `max_block_bytes`. `ProcessProposal` (deterministic): accepts iff every transaction decodes and verifies
 *   and the block fits those bounds.
 * - `FinalizeBlock`: applies the block (`applyBlock`, nothing persisted): committers are the validators of
 *   `decided_last_commit` whose vote flag is COMMIT, mapped from CometBFT addresses to our consensus keys;
 *   evidence is `misbehavior`; validator updates are the block's power changes (CometBFT uses them from
 *   height H+2).
 *   A request without height and time (as `abci-cli finalize_block` sends) is the next height at the
 *   previous block's time; CometBFT never sends one.
 * - `Commit`: persists. `Query`: our query paths (`path`, or `data` when `path` is empty), canonical JSON.
 *
 * The attestation checks of the embedded engine are not used here: CometBFT's commit is the attestation.
 */
import { create } from "@bufbuild/protobuf";
import { canonical, canonicalBytes, type JsonValue, parseJson } from "../../core/canonical.ts";
import { MAX_TX_BYTES } from "../../core/limits.ts";
import { toHex } from "../../core/hex.ts";
import type { LedgerApp } from "../app.ts";
import { rawHash } from "../envelope.ts";
import type { Evidence } from "../evidence.ts";
import { LedgerView } from "../state/accessors.ts";
import type { Overlay } from "../state/overlay.ts";
import type { TxResult } from "../state/store.ts";
import { hasPower } from "../../workflows/validator.ts";
import {
  CheckTxType,
  ExecTxResultSchema,
  MisbehaviorType,
  type Request,
  type Response,
  ResponseApplySnapshotChunk_Result,
  ResponseApplySnapshotChunkSchema,
  ResponseCheckTxSchema,
  ResponseCommitSchema,
  ResponseEchoSchema,
  ResponseExtendVoteSchema,
  ResponseFinalizeBlockSchema,
  ResponseInfoSchema,
  ResponseInitChainSchema,
  ResponseListSnapshotsSchema,
  ResponseLoadSnapshotChunkSchema,
  ResponseOfferSnapshot_Result,
  ResponseOfferSnapshotSchema,
  ResponsePrepareProposalSchema,
  ResponseProcessProposal_ProposalStatus,
  ResponseProcessProposalSchema,
  ResponseQuerySchema,
  ResponseVerifyVoteExtension_VerifyStatus,
  ResponseVerifyVoteExtensionSchema,
  type ValidatorUpdate,
  ValidatorUpdateSchema,
} from "./gen/tendermint/abci/types_pb.ts";
import { BlockIDFlag } from "./gen/tendermint/types/validator_pb.ts";
import { PublicKeySchema } from "./gen/tendermint/crypto/keys_pb.ts";
import { fromHex } from "../../core/hex.ts";
import { abciCode, CODESPACE, cometAddress, hashBytes, timestampMs } from "./wire_values.ts";

/** Go's zero time (0001-01-01T00:00:00Z) in milliseconds: what abci-cli sends as a block time. */
const GO_ZERO_TIME_MS = -62_135_596_800_000;

/** The bound on transaction hashes remembered as admitted to CometBFT's mempool (for `/tx` pending). */
export const MAX_TRACKED_PENDING = 100_000;

/** The `app_state` written into CometBFT's genesis.json: it names our genesis by id. */
export function cometAppState(genesisId: string): JsonValue {
  return { genesis_id: genesisId };
}

function validatorUpdate(consensusKey: string, power: number): ValidatorUpdate {
  return create(ValidatorUpdateSchema, {
    pubKey: create(PublicKeySchema, { sum: { case: "ed25519", value: fromHex(consensusKey) } }),
    power: BigInt(power),
  });
}

/** Our validator set at the committed head, as ABCI validator updates sorted by key. */
export function abciValidators(app: LedgerApp): ValidatorUpdate[] {
  const view = new LedgerView(app.store);
  const height = app.info().height;
  return view.validators()
    .filter((v) => hasPower(v.state) && view.powerAt(v.consensus_key, height) > 0)
    .map((v) => validatorUpdate(v.consensus_key, view.powerAt(v.consensus_key, height)));
}

/** Serves one `LedgerApp` to CometBFT. */
export class AbciApplication {
  readonly #app: LedgerApp;
  readonly #log: (line: string) => void;
  #projection: Overlay;
  /** Hashes admitted by `CheckTx` and not yet committed or dropped by a recheck (insertion order). */
  readonly #pending = new Set<string>();
  /** Called after each commit with the new height. */
  onCommit: (height: number) => void = () => {};

  constructor(app: LedgerApp, log: (line: string) => void = () => {}) {
    this.#app = app;
    this.#log = log;
    this.#projection = app.projection();
  }

  /** True while `hash` sits in CometBFT's mempool as far as this node's `CheckTx` saw. */
  isPending(hash: string): boolean {
    return this.#pending.has(hash);
  }

  /** How many transactions are pending as far as this node saw. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Answers one request (never `Flush`, which the server handles). */
  handle(request: Request): Response["value"] {
    const r = request.value;
    switch (r.case) {
      case "echo":
        return { case: "echo", value: create(ResponseEchoSchema, { message: r.value.message }) };
      case "info":
        return { case: "info", value: this.#info() };
      case "initChain":
        return { case: "initChain", value: this.#initChain(r.value) };
      case "query":
        return { case: "query", value: this.#query(r.value.path, r.value.data) };
      case "checkTx":
        return { case: "checkTx", value: this.#checkTx(r.value.tx, r.value.type) };
      case "prepareProposal":
        return {
          case: "prepareProposal",
          value: create(ResponsePrepareProposalSchema, {
            txs: this.#prepare(r.value.txs, r.value.maxTxBytes),
          }),
        };
      case "processProposal":
        return {
          case: "processProposal",
          value: create(ResponseProcessProposalSchema, { status: this.#process(r.value.txs) }),
        };
      case "finalizeBlock":
        return { case: "finalizeBlock", value: this.#finalize(r.value) };
      case "commit":
        return { case: "commit", value: this.#commit() };
      case "listSnapshots":
        return { case: "listSnapshots", value: create(ResponseListSnapshotsSchema) };
      case "offerSnapshot":
        return {
          case: "offerSnapshot",
          value: create(ResponseOfferSnapshotSchema, { result: ResponseOfferSnapshot_Result.REJECT }),
        };
      case "loadSnapshotChunk":
        return { case: "loadSnapshotChunk", value: create(ResponseLoadSnapshotChunkSchema) };
      case "applySnapshotChunk":
        return {
          case: "applySnapshotChunk",
          value: create(ResponseApplySnapshotChunkSchema, {
            result: ResponseApplySnapshotChunk_Result.ABORT,
          }),
        };
      case "extendVote":
        return { case: "extendVote", value: create(ResponseExtendVoteSchema) };
      case "verifyVoteExtension":
        return {
          case: "verifyVoteExtension",
          value: create(ResponseVerifyVoteExtensionSchema, {
            status: ResponseVerifyVoteExtension_VerifyStatus.ACCEPT,
          }),
        };
      default:
        throw new Error(`Cannot answer request: kind is ${String(r.case)}`);
    }
  }

  #info() {
    const head = this.#app.info();
    return create(ResponseInfoSchema, {
      data: "neuroshard",
      version: "neuroshard-deno-v1",
      appVersion: 1n,
      lastBlockHeight: BigInt(head.height),
      lastBlockAppHash: head.height === 0 ? new Uint8Array() : hashBytes(head.app_hash),
    });
  }

  #initChain(req: Extract<Request["value"], { case: "initChain" }>["value"]) {
    const head = this.#app.info();
    const fail = (m: string): never => {
      throw new Error(`Cannot init chain: ${m}`);
    };
    if (req.chainId !== head.chain_id) fail(`chain_id is ${req.chainId}, expected ${head.chain_id}`);
    if (req.initialHeight !== 1n) fail(`initial_height is ${req.initialHeight}, expected 1`);
    if (head.height !== 0) fail(`the state is at height ${head.height}, expected 0`);
    let appState: JsonValue = null;
    try {
      appState = JSON.parse(new TextDecoder().decode(req.appStateBytes));
    } catch {
      fail("app_state is not JSON");
    }
    const expected = cometAppState(this.#app.genesisId);
    if (canonical(appState) !== canonical(expected)) {
      fail(`app_state is ${canonical(appState)}, expected ${canonical(expected)}`);
    }
    const ours = abciValidators(this.#app);
    const spell = (vs: readonly ValidatorUpdate[]) =>
      vs.map((v) => `${v.pubKey?.sum.case}:${toHex(v.pubKey?.sum.value ?? new Uint8Array())}:${v.power}`)
        .sort()
        .join(",");
    if (req.validators.length > 0 && spell(req.validators) !== spell(ours)) {
      fail(`the validators are ${spell(req.validators)}, expected ${spell(ours)}`);
    }
    return create(ResponseInitChainSchema, { validators: ours, appHash: hashBytes(head.app_hash) });
  }

  #query(path: string, data: Uint8Array) {
    const head = this.#app.info();
    const p = path === "" ? new TextDecoder().decode(data) : path;
    try {
      const value = this.#app.query(p);
      if (value === null) {
        return create(ResponseQuerySchema, {
          code: abciCode("not_found"),
          codespace: CODESPACE,
          log: `Cannot answer query: no such path ${p}`,
          height: BigInt(head.height),
        });
      }
      return create(ResponseQuerySchema, { value: canonicalBytes(value), height: BigInt(head.height) });
    } catch (e) {
      const code = (e as { code?: string }).code ?? "internal_error";
      return create(ResponseQuerySchema, {
        code: abciCode(code),
        codespace: CODESPACE,
        log: (e as Error).message,
        height: BigInt(head.height),
      });
    }
  }

  #checkTx(raw: Uint8Array, type: CheckTxType) {
    const hash = rawHash(raw);
    const r: TxResult = raw.length > MAX_TX_BYTES
      ? {
        ok: false,
        code: "too_large",
        message: `Cannot admit transaction: ${raw.length} bytes exceeds ${MAX_TX_BYTES}`,
      }
      : this.#app.checkTx(raw, this.#projection, Date.now());
    if (r.ok) {
      if (type === CheckTxType.NEW && this.#pending.size < MAX_TRACKED_PENDING) this.#pending.add(hash);
      return create(ResponseCheckTxSchema, { data: canonicalBytes({ ok: true }) });
    }
    this.#pending.delete(hash);
    return create(ResponseCheckTxSchema, {
      code: abciCode(r.code),
      codespace: CODESPACE,
      log: r.message,
      data: canonicalBytes(r as unknown as JsonValue),
    });
  }

  #prepare(txs: readonly Uint8Array[], maxTxBytes: bigint): Uint8Array[] {
    const bound = Math.min(Number(maxTxBytes), this.#app.params.max_block_bytes);
    const out: Uint8Array[] = [];
    let size = 0;
    for (const raw of txs) {
      if (raw.length > MAX_TX_BYTES || size + raw.length > bound) continue;
      if (!this.#app.verify(raw).ok) continue;
      out.push(raw);
      size += raw.length;
    }
    return out;
  }

  #process(txs: readonly Uint8Array[]): ResponseProcessProposal_ProposalStatus {
    let size = 0;
    for (const raw of txs) {
      size += raw.length;
      if (raw.length > MAX_TX_BYTES || !this.#app.verify(raw).ok) {
        return ResponseProcessProposal_ProposalStatus.REJECT;
      }
    }
    return size > this.#app.params.max_block_bytes
      ? ResponseProcessProposal_ProposalStatus.REJECT
      : ResponseProcessProposal_ProposalStatus.ACCEPT;
  }

  #finalize(req: Extract<Request["value"], { case: "finalizeBlock" }>["value"]) {
    const head = this.#app.info();
    const byAddress = new Map<string, string>();
    for (const v of new LedgerView(this.#app.store).validators()) {
      byAddress.set(cometAddress(v.consensus_key), v.consensus_key);
    }
    const keyOf = (address: Uint8Array | undefined) =>
      byAddress.get(toHex(address ?? new Uint8Array()).toUpperCase());
    const committers = [
      ...new Set(
        (req.decidedLastCommit?.votes ?? [])
          .filter((v) => v.blockIdFlag === BlockIDFlag.BLOCK_ID_FLAG_COMMIT)
          .map((v) => keyOf(v.validator?.address))
          .filter((k): k is string => k !== undefined),
      ),
    ].sort();
    const evidence: Evidence[] = [];
    for (const m of req.misbehavior) {
      const key = keyOf(m.validator?.address);
      if (!key) {
        this.#log(
          `abci: evidence names an unknown validator ${toHex(m.validator?.address ?? new Uint8Array())}`,
        );
        continue;
      }
      if (m.type !== MisbehaviorType.DUPLICATE_VOTE && m.type !== MisbehaviorType.LIGHT_CLIENT_ATTACK) {
        continue;
      }
      evidence.push({
        kind: m.type === MisbehaviorType.DUPLICATE_VOTE ? "duplicate_vote" : "light_client_attack",
        consensus_key: key,
        height: Number(m.height),
        time: timestampMs(m.time),
      });
    }
    // abci-cli sends neither height nor time; CometBFT always sends both (heights start at 1).
    const height = req.height === 0n ? head.height + 1 : Number(req.height);
    const time = req.height === 0n && timestampMs(req.time) <= GO_ZERO_TIME_MS
      ? head.time
      : timestampMs(req.time);
    const record = {
      engine: "cometbft",
      chain_id: head.chain_id,
      height,
      time,
      prev_app_hash: head.app_hash,
      block_hash: toHex(req.hash),
      proposer: toHex(req.proposerAddress).toUpperCase(),
      committers,
      evidence: evidence as unknown as JsonValue[],
      txs: req.txs.map((raw) => {
        try {
          return parseJson(new TextDecoder().decode(raw));
        } catch {
          return null;
        }
      }),
    };
    const result = this.#app.applyBlock({ height, time, txs: req.txs, committers, evidence, record });
    return create(ResponseFinalizeBlockSchema, {
      txResults: result.results.map((r) =>
        r.ok
          ? create(ExecTxResultSchema, { data: canonicalBytes({ ok: true }) })
          : create(ExecTxResultSchema, {
            code: abciCode(r.code),
            codespace: CODESPACE,
            log: r.message,
            data: canonicalBytes(r as unknown as JsonValue),
          })
      ),
      validatorUpdates: result.power_changes.map((c) => validatorUpdate(c.consensus_key, c.power)),
      appHash: hashBytes(result.app_hash),
    });
  }

  #commit() {
    const pending = this.#app.pendingResult();
    const head = this.#app.commit();
    for (const h of pending?.tx_hashes ?? []) this.#pending.delete(h);
    this.#projection = this.#app.projection();
    this.onCommit(head.height);
    return create(ResponseCommitSchema, { retainHeight: 0n });
  }
}
