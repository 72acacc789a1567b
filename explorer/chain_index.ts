/**
 * The explorer's index of a chain, built by scanning committed blocks once each, oldest first: a summary of
 * every block (time, transactions, app hash, committers), of every transaction (raw hash, txid, kind, sender,
 * result; never its body, which may hold a 1 MiB upload), every claim with the events that followed it
 * (challenges, uploads with their decoded byte counts, seals, resolves), and every account seen. Committed
 * blocks never change, so nothing is scanned twice. Every collection is bounded (`IndexBounds`): past a bound
 * the oldest entries are dropped and `truncated` says so.
 *
 * @example
 * ```ts
 * import { ChainIndex } from "./chain_index.ts";
 * import { StateSource } from "./state_source.ts";
 * const index = new ChainIndex(StateSource.open("validator-0/state.sqlite"));
 * await index.sync();
 * index.claims().length;
 * ```
 */
import { canonicalBytes, isObject, type JsonObject } from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import type { ChainSource, ChainStatus } from "./source.ts";

/** One committed block in brief. */
export interface BlockSummary {
  readonly height: number;
  readonly time: number;
  readonly txs: number;
  readonly app_hash: string;
  /** Consensus keys that signed this block's app hash (from the next block's `last_commit`); null until then. */
  committers: string[] | null;
}

/** One committed transaction in brief. */
export interface TxSummary {
  readonly hash: string;
  readonly txid: string;
  readonly height: number;
  readonly index: number;
  readonly kind: string;
  readonly sender: string;
  readonly nonce: number | null;
  readonly ok: boolean;
  readonly code: string | null;
  /** The claim a `claim`, `grow`, `challenge`, `upload`, `seal` or `resolve` is about. */
  readonly claim_id: string | null;
  /** Decoded bytes of an `upload`'s chunk. */
  readonly bytes: number | null;
  /** The body's small fields (scalars and short arrays of scalars; never upload data or metadata). */
  readonly fields: JsonObject;
}

/** One event that followed a claim. */
export interface ClaimEvent {
  readonly hash: string;
  readonly kind: string;
  readonly height: number;
  readonly sender: string;
  readonly ok: boolean;
  readonly code: string | null;
  readonly stage: number | null;
  readonly challenge_kind: string | null;
  readonly object_root: string | null;
  readonly bytes: number | null;
}

/** A claim (training step or growth) as committed, with what its transaction stated. */
export interface ClaimEntry {
  readonly claim_id: string;
  readonly kind: "training" | "growth";
  readonly hash: string;
  readonly height: number;
  readonly owner: string;
  readonly workers: readonly string[];
  /** The record's step (a training claim), or null. */
  readonly step: number | null;
  /** The record's loss as a hex float (a training claim), or null. */
  readonly loss: string | null;
  readonly record_root: string | null;
  readonly model_root: string | null;
  readonly parent: string | null;
  readonly events: ClaimEvent[];
}

/** The bounds of an index. */
export interface IndexBounds {
  readonly blocks: number;
  readonly txs: number;
  readonly claims: number;
  readonly accounts: number;
  /** Blocks scanned by one `sync` call. */
  readonly blocksPerSync: number;
}

/** Bounds that hold a long devnet whole (about 60 MB at the worst). */
export const DEFAULT_BOUNDS: IndexBounds = {
  blocks: 200_000,
  txs: 200_000,
  claims: 20_000,
  accounts: 100_000,
  blocksPerSync: 2_000,
};

const CLAIM_EVENTS = new Set(["challenge", "upload", "seal", "resolve"]);
const isRoot = (v: unknown): v is string => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
const isAccount = (v: unknown): v is string => typeof v === "string" && /^0[23][0-9a-f]{64}$/.test(v);

/** Decoded length of a strict base64 string (its bytes are not decoded). */
export function base64Bytes(data: unknown): number | null {
  if (typeof data !== "string" || data.length % 4 !== 0) return null;
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return (data.length / 4) * 3 - pad;
}

const isScalar = (v: unknown) =>
  typeof v === "number" || typeof v === "boolean" || v === null || (typeof v === "string" && v.length <= 200);

/** The small fields of a body: scalars (strings up to 200 characters) and arrays of at most 256 scalars. */
export function smallFields(body: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === "kind" || k === "chain_id" || k === "nonce") continue;
    if (isScalar(v) || (Array.isArray(v) && v.length <= 256 && v.every(isScalar))) out[k] = v;
  }
  return out;
}

/** Inserts into a bounded map, dropping the oldest entry past `limit`; true when one was dropped. */
function putBounded<K, V>(map: Map<K, V>, key: K, value: V, limit: number): boolean {
  map.set(key, value);
  if (map.size <= limit) return false;
  map.delete(map.keys().next().value as K);
  return true;
}

/** An incrementally built, bounded index of one chain. */
export class ChainIndex {
  readonly source: ChainSource;
  readonly bounds: IndexBounds;
  /** Height of the last block scanned. */
  scanned = 0;
  /** The head seen at the last sync. */
  head: ChainStatus | null = null;
  /** True once a bound dropped old entries. */
  truncated = false;
  /** Transactions scanned (accepted and rejected), including any dropped at the bound. */
  txCount = 0;
  readonly #blocks = new Map<number, BlockSummary>();
  readonly #txs = new Map<string, TxSummary>();
  readonly #byTxid = new Map<string, string>();
  readonly #claims = new Map<string, ClaimEntry>();
  readonly #accounts = new Map<string, number>();
  #syncing: Promise<void> | null = null;

  constructor(source: ChainSource, bounds: IndexBounds = DEFAULT_BOUNDS) {
    this.source = source;
    this.bounds = bounds;
  }

  /** Scans up to `blocksPerSync` new blocks (one scan at a time; concurrent callers share it). */
  sync(): Promise<void> {
    this.#syncing ??= this.#scan().finally(() => (this.#syncing = null));
    return this.#syncing;
  }

  async #scan(): Promise<void> {
    const head = await this.source.status();
    this.head = head;
    const last = Math.min(head.height, this.scanned + this.bounds.blocksPerSync);
    for (let h = this.scanned + 1; h <= last; h++) {
      const record = await this.source.block(h);
      if (!record) break;
      this.#add(record.height, record.block, record.app_hash, record.results);
      this.scanned = h;
    }
  }

  #add(height: number, block: JsonObject, appHash: string, results: readonly unknown[]): void {
    const txs = Array.isArray(block.txs) ? block.txs : [];
    const previous = this.#blocks.get(height - 1);
    if (previous && Array.isArray(block.last_commit)) {
      previous.committers = block.last_commit.map((a) => isObject(a) ? String(a.consensus_key) : "?");
    }
    this.truncated = putBounded(this.#blocks, height, {
      height,
      time: Number(block.time),
      txs: txs.length,
      app_hash: appHash,
      committers: null,
    }, this.bounds.blocks) || this.truncated;
    txs.forEach((envelope, index) => {
      if (!isObject(envelope)) return;
      const r = results[index];
      this.#addTx(height, index, envelope, isObject(r) ? r : {});
    });
  }

  #addTx(height: number, index: number, envelope: JsonObject, result: JsonObject): void {
    this.txCount++;
    const body = isObject(envelope.body) ? envelope.body : {};
    const sender = String(envelope.public_key);
    const kind = String(body.kind);
    const hash = sha256Hex(canonicalBytes(envelope));
    const txid = id({ body, public_key: envelope.public_key ?? null });
    const ok = result.ok === true;
    const claimId = kind === "claim" || kind === "grow" ? txid : isRoot(body.claim_id) ? body.claim_id : null;
    const bytes = kind === "upload" ? base64Bytes(body.data) : null;
    const tx: TxSummary = {
      hash,
      txid,
      height,
      index,
      kind,
      sender,
      nonce: typeof body.nonce === "number" ? body.nonce : null,
      ok,
      code: typeof result.code === "string" ? result.code : null,
      claim_id: claimId,
      bytes,
      fields: smallFields(body),
    };
    this.truncated = putBounded(this.#txs, hash, tx, this.bounds.txs) || this.truncated;
    putBounded(this.#byTxid, txid, hash, this.bounds.txs);
    this.#seeAccount(sender, height);
    for (const k of ["to", "owner"]) if (isAccount(body[k])) this.#seeAccount(body[k] as string, height);
    if (Array.isArray(body.workers)) {
      for (const w of body.workers) if (isAccount(w)) this.#seeAccount(w, height);
    }
    if (ok && (kind === "claim" || kind === "grow")) this.#addClaim(tx, body);
    if (claimId && CLAIM_EVENTS.has(kind)) {
      this.#claims.get(claimId)?.events.push({
        hash,
        kind,
        height,
        sender,
        ok,
        code: tx.code,
        stage: typeof body.stage === "number" ? body.stage : null,
        challenge_kind: typeof body.challenge_kind === "string" ? body.challenge_kind : null,
        object_root: isRoot(body.object_root) ? body.object_root : null,
        bytes,
      });
    }
  }

  #addClaim(tx: TxSummary, body: JsonObject): void {
    const metadata = isObject(body.metadata) ? body.metadata : {};
    const recordRoot = isRoot(body.record_root) ? body.record_root : null;
    const record = recordRoot ? metadata[recordRoot] : undefined;
    const r = isObject(record) ? record : {};
    const entry: ClaimEntry = {
      claim_id: tx.txid,
      kind: tx.kind === "grow" ? "growth" : "training",
      hash: tx.hash,
      height: tx.height,
      owner: tx.sender,
      workers: Array.isArray(body.workers) ? body.workers.filter(isAccount) : [],
      step: typeof r.step === "number" ? r.step : null,
      loss: typeof r.loss === "string" ? r.loss : null,
      record_root: recordRoot,
      model_root: isRoot(r.model_root) ? r.model_root : isRoot(body.model_root) ? body.model_root : null,
      parent: isRoot(r.parent) ? r.parent : isRoot(body.parent) ? body.parent : null,
      events: [],
    };
    this.truncated = putBounded(this.#claims, tx.txid, entry, this.bounds.claims) || this.truncated;
  }

  #seeAccount(account: string, height: number): void {
    if (this.#accounts.has(account)) return;
    this.truncated = putBounded(this.#accounts, account, height, this.bounds.accounts) || this.truncated;
  }

  /** The indexed blocks from `before - 1` down, at most `limit`, newest first. */
  blocks(before: number, limit: number): BlockSummary[] {
    const out: BlockSummary[] = [];
    for (let h = Math.min(before - 1, this.scanned); h >= 1 && out.length < limit; h--) {
      const b = this.#blocks.get(h);
      if (!b) break;
      out.push(b);
    }
    return out;
  }

  /** One block summary. */
  block(height: number): BlockSummary | null {
    return this.#blocks.get(height) ?? null;
  }

  /** A transaction by raw hash or by txid. */
  tx(hashOrTxid: string): TxSummary | null {
    return this.#txs.get(hashOrTxid) ?? this.#txs.get(this.#byTxid.get(hashOrTxid) ?? "") ?? null;
  }

  /** Transactions sent by or naming `account`, newest first, at most `limit`. */
  txsOf(account: string, limit: number): TxSummary[] {
    const out: TxSummary[] = [];
    const all = [...this.#txs.values()];
    for (let i = all.length - 1; i >= 0 && out.length < limit; i--) {
      if (all[i]!.sender === account) out.push(all[i]!);
    }
    return out;
  }

  /** Every indexed transaction of the given kinds, oldest first. */
  txsOfKind(kinds: readonly string[]): TxSummary[] {
    const want = new Set(kinds);
    return [...this.#txs.values()].filter((t) => want.has(t.kind));
  }

  /** Every indexed claim, oldest first. */
  claims(): ClaimEntry[] {
    return [...this.#claims.values()];
  }

  /** A claim by id. */
  claim(claimId: string): ClaimEntry | null {
    return this.#claims.get(claimId) ?? null;
  }

  /** Every account seen, with the height it was first seen at. */
  accounts(): [string, number][] {
    return [...this.#accounts.entries()];
  }

  /** Whether an account was seen. */
  seen(account: string): boolean {
    return this.#accounts.has(account);
  }
}
