/**
 * The ledger application, with the interface named after ABCI 2.0 so that a CometBFT adapter can drive it
 * later without touching the rules: `info`, `initChain`, `checkTx`, `prepareProposal`, `processProposal`,
 * `finalizeBlock` (applies into an overlay, persists nothing), `commit` (persists) and `query` (read-only).
 * A signature verified by an accepted `checkTx` is cached by raw hash (bounded by bytes, `SignatureCache`)
 * until the transaction commits or the mempool drops it; a rejected envelope is never kept. `initChain` runs when
 * `open` finds an empty state; a state created from another genesis is refused (`genesis_mismatch`).
 *
 * @example
 * ```ts
 * import { LedgerApp } from "./app.ts";
 * import { parseJson } from "../core/canonical.ts";
 * const app = LedgerApp.open(":memory:", parseJson(Deno.readTextFileSync("genesis.json")));
 * const head = app.info(); // height 0, app hash chained from the genesis id
 * const r = app.finalizeBlock({
 *   chain_id: head.chain_id, height: 1, time: head.time + 1000, prev_app_hash: head.app_hash, last_commit: [], txs: [],
 * });
 * app.commit(); // now head.height is 1 and head.app_hash is r.app_hash
 * ```
 */
import { canonicalBytes, type JsonValue } from "../core/canonical.ts";
import { ProtocolError, type Rejection } from "../core/errors.ts";
import { MAX_TX_BYTES } from "../core/limits.ts";
import { decodeEnvelope, type Envelope, rawHash, type VerifiedEnvelope, verifyEnvelope } from "./envelope.ts";
import {
  type Genesis,
  genesisId,
  genesisSupply,
  type LedgerParams,
  parseGenesis,
} from "../genesis/schema.ts";
import { LedgerView, LedgerWriter } from "./state/accessors.ts";
import { nextAppHash } from "./state/app_hash.ts";
import { assertConserved, blockSums, type MoneySums, scanSums } from "./state/conservation.ts";
import { Overlay } from "./state/overlay.ts";
import { type ChainHead, LedgerStore, type TxResult } from "./state/store.ts";
import { type Block, checkBlock } from "./block.ts";
import type { Evidence } from "./evidence.ts";
import { beginBlock } from "./boundary.ts";
import { executeTx } from "./tx/execute.ts";
import type { LedgerEnv } from "./tx/context.ts";
import { answerQuery } from "./query.ts";
import { initTraining } from "./training/store.ts";
import { initInference } from "./inference/genesis.ts";
import { initData } from "./data/store.ts";
import { SIG_CACHE_BYTES, SignatureCache } from "./signature_cache.ts";

/** Options of an application instance. */
export interface AppOptions {
  /** Test hook: rule overrides that make this node deliberately diverge (never set in production). */
  readonly divergentParams?: Partial<LedgerParams>;
  /** Test hook at the state layer, run after the transactions of every block (e.g. to credit rewards). */
  readonly afterTransactions?: (state: LedgerWriter, env: LedgerEnv) => void;
  /** Test hook run between applying a block and persisting it (crash tests kill the process here). */
  readonly beforeCommit?: (height: number) => void;
  /** The byte bound of the verified-signature cache (default `SIG_CACHE_BYTES`). */
  readonly signatureCacheBytes?: number;
}

/** The outcome of `finalizeBlock`. */
export interface FinalizeResult {
  readonly height: number;
  readonly app_hash: string;
  readonly results: TxResult[];
  readonly tx_hashes: string[];
  /** Validators whose power at this height differs from the previous height (what CometBFT is told). */
  readonly power_changes: PowerChange[];
}

/** A validator's new voting power, effective in the ledger from the block that reports it. */
export interface PowerChange {
  readonly consensus_key: string;
  readonly power: number;
}

/** A block to apply, as every engine can describe it. */
export interface BlockInput {
  readonly height: number;
  /** Block time, milliseconds since the epoch, not before the previous block's. */
  readonly time: number;
  /** Envelope values in order, or raw envelope bytes. */
  readonly txs: readonly (JsonValue | Uint8Array)[];
  /** Consensus keys that committed the previous block (they share its verifier reward). */
  readonly committers: readonly string[];
  /** Verified misbehaviour reported by the engine. */
  readonly evidence: readonly Evidence[];
  /** What is stored as the block record (the embedded block, or the CometBFT block summary). */
  readonly record: JsonValue;
}

function tooLarge(size: number): Rejection {
  return {
    ok: false,
    code: "too_large",
    message: `Cannot apply transaction: ${size} bytes exceeds ${MAX_TX_BYTES}`,
  };
}

/** The validators whose history gained an entry at `height` that changed their power. */
function powerChanges(state: LedgerWriter, height: number): PowerChange[] {
  const out: PowerChange[] = [];
  for (const v of state.validators()) {
    const last = v.history[v.history.length - 1];
    if (!last || last[0] !== height) continue;
    const power = last[1];
    if (power !== state.powerAt(v.consensus_key, height - 1)) {
      out.push({ consensus_key: v.consensus_key, power });
    }
  }
  return out;
}

/** The replicated ledger application of one node. */
export class LedgerApp {
  readonly store: LedgerStore;
  readonly genesis: Genesis;
  readonly genesisId: string;
  readonly params: LedgerParams;
  readonly #options: AppOptions;
  #head: ChainHead;
  #sums: MoneySums;
  #pending:
    | { record: JsonValue; overlay: Overlay; head: ChainHead; sums: MoneySums; result: FinalizeResult }
    | null = null;
  readonly #verified: SignatureCache;
  /** Raw hashes of envelope objects this node decoded itself (the proposer's own blocks skip re-encoding). */
  readonly #hashOf = new WeakMap<object, string>();
  /** How many envelopes this instance verified cryptographically (cache hits are not counted). */
  verifications = 0;

  private constructor(store: LedgerStore, genesisValue: JsonValue, options: AppOptions) {
    this.store = store;
    this.genesis = parseGenesis(genesisValue);
    this.genesisId = genesisId(genesisValue);
    this.params = { ...this.genesis.params, ...this.genesis.consensus, ...options.divergentParams };
    this.#options = options;
    this.#verified = new SignatureCache(options.signatureCacheBytes ?? SIG_CACHE_BYTES);
    const head = store.head();
    if (head && head.genesis_id !== this.genesisId) {
      throw new ProtocolError(
        "genesis_mismatch",
        `Cannot start node: the state was created with genesis ${head.genesis_id}, given ${this.genesisId}`,
      );
    }
    this.#head = head ?? this.initChain();
    this.#sums = scanSums(store);
    assertConserved(this.#sums, this.#head.height);
  }

  /** Opens the state at `path` (":memory:" for tests) for `genesis`, initialising it when new. */
  static open(path: string, genesis: JsonValue, options: AppOptions = {}): LedgerApp {
    return new LedgerApp(new LedgerStore(path), genesis, options);
  }

  /** Chain facts: genesis id, height, app hash, time of the last committed block. */
  info(): ChainHead & { chain_id: string } {
    return { ...this.#head, chain_id: this.genesis.chain_id };
  }

  /** Writes the genesis state and commits height 0; app_hash[0] chains from the genesis id. */
  private initChain(): ChainHead {
    const overlay = new Overlay(this.store);
    const state = new LedgerWriter(overlay);
    const g = this.genesis;
    for (const a of g.accounts) state.setAccount(a.id, { balance: a.balance, nonce: 0 });
    for (const v of g.validators) {
      state.setValidator({
        owner: v.owner,
        consensus_key: v.consensus_key,
        amount: v.amount,
        state: { status: "active" },
        history: [[0, v.amount / g.params.bond_unit]],
      });
    }
    state.setGenesisSupply(genesisSupply(g));
    initTraining(state, g.training);
    initInference(state, g.training !== null, g.codec, g.params);
    initData(state, g.data);
    const changes = overlay.changes();
    const head = {
      genesis_id: this.genesisId,
      height: 0,
      app_hash: nextAppHash(this.genesisId, changes),
      time: g.genesis_time,
    };
    this.store.commit(head, changes, null);
    return head;
  }

  /** Decodes and verifies raw envelope bytes, reusing a cached verification of the same bytes (never caching). */
  verify(raw: Uint8Array): { ok: true; tx: VerifiedEnvelope; hash: string } | Rejection {
    const hash = rawHash(raw);
    const cached = this.#verified.get(hash);
    if (cached) return { ok: true, tx: cached, hash };
    this.verifications++;
    const r = decodeEnvelope(raw);
    if (!r.ok) return r;
    this.#hashOf.set(r.value.envelope, hash);
    return { ok: true, tx: r.value, hash };
  }

  /** The verified-signature cache's size: entries and the raw bytes they came from. */
  signatureCache(): { entries: number; bytes: number } {
    return { entries: this.#verified.size, bytes: this.#verified.bytes };
  }

  /** Forgets the cached verification of `hash` (the mempool dropped it). */
  forget(hash: string): void {
    this.#verified.delete(hash);
  }

  /** A fresh projection of the committed state for mempool admission. */
  projection(): Overlay {
    return new Overlay(this.store);
  }

  /** Admission check: applies `raw` to `projection` (which keeps it when accepted). */
  checkTx(raw: Uint8Array, projection: Overlay, time: number): TxResult & { hash: string } {
    const v = this.verify(raw);
    if (!v.ok) return { ok: false, code: v.code, message: v.message, hash: rawHash(raw) };
    return { ...this.checkVerified(v.tx, v.hash, raw.length, projection, time), hash: v.hash };
  }

  /**
   * Admission check of an envelope `verify` already decoded: applies it to `projection` (which keeps it when
   * accepted) and, when accepted, caches its verification until it commits or is forgotten.
   */
  checkVerified(
    tx: VerifiedEnvelope,
    hash: string,
    bytes: number,
    projection: Overlay,
    time: number,
  ): TxResult {
    const env = { height: this.#head.height + 1, time: Math.max(time, this.#head.time), params: this.params };
    const result = executeTx(tx, projection, env, this.genesis.chain_id);
    if (result.ok) this.#verified.set(hash, tx, bytes);
    return result;
  }

  /** Picks envelopes (raw bytes, in order) that fit the block byte bound with room for the commit. */
  prepareProposal(candidates: readonly Uint8Array[], reservedBytes: number): Envelope[] {
    const txs: Envelope[] = [];
    let size = reservedBytes;
    for (const raw of candidates) {
      if (size + raw.length + 1 > this.params.max_block_bytes) break;
      const v = this.verify(raw);
      if (!v.ok) continue;
      txs.push(v.tx.envelope);
      size += raw.length + 1;
    }
    return txs;
  }

  /** Checks a proposed block against the committed head without applying it. */
  processProposal(block: unknown): { ok: true; block: Block } | Rejection {
    return checkBlock(
      block,
      this.#head,
      this.genesis.chain_id,
      this.params.max_block_bytes,
      new LedgerView(this.store),
    );
  }

  /**
   * The embedded engine's `finalizeBlock`: checks the block and its attestations (`processProposal`), then
   * applies it with the attesting keys as committers (`applyBlock`).
   */
  finalizeBlock(value: unknown): FinalizeResult {
    const checked = this.processProposal(value);
    if (!checked.ok) throw new ProtocolError(checked.code, checked.message);
    const block = checked.block;
    return this.applyBlock({
      height: block.height,
      time: block.time,
      txs: block.txs,
      committers: block.last_commit.map((a) => a.consensus_key),
      evidence: [],
      record: block as unknown as JsonValue,
    });
  }

  /**
   * Applies a block in memory, whichever engine ordered it: boundary rules (evidence first), then each
   * transaction; checks conservation; persists nothing. `txs` are envelope values (embedded engine) or raw
   * bytes (CometBFT), which are decoded here so that undecodable bytes get a failed result like any other
   * bad transaction. The caller has checked who committed and what evidence is verified.
   */
  applyBlock(input: BlockInput): FinalizeResult {
    if (input.height !== this.#head.height + 1) {
      throw new ProtocolError(
        "bad_request",
        `Cannot apply block: height is ${input.height}, expected ${this.#head.height + 1}`,
      );
    }
    if (!Number.isSafeInteger(input.time) || input.time < this.#head.time) {
      throw new ProtocolError(
        "bad_request",
        `Cannot apply block: time is ${input.time}, before ${this.#head.time}`,
      );
    }
    const overlay = new Overlay(this.store);
    const state = new LedgerWriter(overlay);
    const env: LedgerEnv = { height: input.height, time: input.time, params: this.params };
    beginBlock(state, env, input.committers, input.evidence);
    const results: TxResult[] = [];
    const hashes: string[] = [];
    for (const tx of input.txs) {
      if (tx instanceof Uint8Array) {
        const hash = rawHash(tx);
        hashes.push(hash);
        const v = tx.length > MAX_TX_BYTES ? tooLarge(tx.length) : this.verify(tx);
        results.push(v.ok ? executeTx(v.tx, overlay, env, this.genesis.chain_id) : v);
        continue;
      }
      let hash = typeof tx === "object" && tx !== null ? this.#hashOf.get(tx) : undefined;
      if (hash === undefined) {
        const raw = canonicalBytes(tx);
        hash = rawHash(raw);
        if (raw.length > MAX_TX_BYTES) {
          hashes.push(hash);
          results.push(tooLarge(raw.length));
          continue;
        }
      }
      hashes.push(hash);
      let v = this.#verified.get(hash);
      if (!v) {
        this.verifications++;
        const r = verifyEnvelope(tx);
        if (!r.ok) {
          results.push({ ok: false, code: r.code, message: r.message });
          continue;
        }
        v = r.value;
      }
      results.push(executeTx(v, overlay, env, this.genesis.chain_id));
    }
    this.#options.afterTransactions?.(state, env);
    const sums = blockSums(this.#sums, overlay);
    assertConserved(sums, input.height);
    const appHash = nextAppHash(this.#head.app_hash, overlay.changes());
    const head = { genesis_id: this.genesisId, height: input.height, app_hash: appHash, time: input.time };
    const result = {
      height: input.height,
      app_hash: appHash,
      results,
      tx_hashes: hashes,
      power_changes: powerChanges(state, input.height),
    };
    this.#pending = { record: input.record, overlay, head, sums, result };
    return result;
  }

  /** The result of the block applied but not yet committed, or null. */
  pendingResult(): FinalizeResult | null {
    return this.#pending?.result ?? null;
  }

  /** Persists the block applied by the last `finalizeBlock` and moves the head. */
  commit(): ChainHead {
    const p = this.#pending;
    if (!p) throw new Error("Cannot commit: no block was finalized");
    this.#options.beforeCommit?.(p.head.height);
    this.store.commit(p.head, p.overlay.changes(), {
      block: p.record,
      results: p.result.results,
      txHashes: p.result.tx_hashes,
    });
    for (const h of p.result.tx_hashes) this.#verified.delete(h);
    this.#head = p.head;
    this.#sums = p.sums;
    this.#pending = null;
    return p.head;
  }

  /**
   * Answers a read-only query path with its query string (`/account/<id>`, `/lifecycle`, `/claim?id=`, ...,
   * and `/vectors`: the genesis's conformance vectors); null when unknown.
   */
  query(path: string): JsonValue | null {
    if (path === "/vectors") return this.genesis.vectors;
    return answerQuery(path, new LedgerView(this.store), this.info(), this.params);
  }

  /** Closes the state database. */
  close(): void {
    this.store.close();
  }
}

/** The raw canonical bytes of an envelope (how a test or client broadcasts it). */
export function rawOf(envelope: Envelope): Uint8Array {
  return canonicalBytes(envelope);
}
