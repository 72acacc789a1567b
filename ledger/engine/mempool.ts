/**
 * The proposer's mempool: raw envelopes in arrival order, each admitted by `checkTx` against the projected
 * state (the committed state plus every transaction already admitted), so a second spend of the same nonce or
 * of the same money is refused at the door. After each commit the remaining transactions are re-checked
 * against the new state and those that no longer apply are dropped.
 *
 * Bounds (PROTOCOL §13.1): at most `maxTxs` transactions and `maxBytes` raw bytes in all, and `maxPerSender`
 * per sender; a full pool answers `mempool_full` and keeps nothing. A transaction whose nonce is ahead of the
 * sender's projected nonce by less than `futureWindow` (and whose sender can pay the fees of all its held
 * transactions) is held, not refused (`{ok: true, held: true}`: it commits only once the sender's missing
 * nonces arrive): it joins the pool, in nonce order, once the gap closes, and is dropped if it does not apply
 * then or is still waiting after `futureTtlMs`. With a `MempoolStore`, every admitted or
 * held transaction is queued for the journal by `add`, and `durable()` resolves once it is on disk (the node
 * answers `accepted` only then); a new pool re-admits the journal.
 *
 * @example
 * ```ts
 * const pool = new Mempool(app, { store: MempoolStore.open(`${home}/mempool.sqlite`) });
 * const r = pool.add(raw, Date.now()); // {ok: true, hash}, or {ok: true, hash, held: true} for a future nonce
 * await pool.durable(); // journaled: now the answer may be sent
 * ```
 */
import { reject } from "../../core/errors.ts";
import type { LedgerApp } from "../app.ts";
import { rawHash, type VerifiedEnvelope } from "../envelope.ts";
import { LedgerView } from "../state/accessors.ts";
import type { Overlay } from "../state/overlay.ts";
import type { TxResult } from "../state/store.ts";
import type { MempoolStore } from "./mempool_store.ts";

/** The bounds of a mempool. */
export interface MempoolLimits {
  /** Transactions in the pool, admitted and held. */
  readonly maxTxs: number;
  /** Raw bytes in the pool, admitted and held. */
  readonly maxBytes: number;
  /** Transactions of one sender, admitted and held. */
  readonly maxPerSender: number;
  /** A held nonce is below the sender's projected nonce plus this. */
  readonly futureWindow: number;
  /** How long a held transaction waits for its gap to close. */
  readonly futureTtlMs: number;
}

/** The default bounds. */
export const MEMPOOL_LIMITS: MempoolLimits = {
  maxTxs: 50_000,
  maxBytes: 64 * 1024 * 1024,
  maxPerSender: 256,
  futureWindow: 256,
  futureTtlMs: 60_000,
};

/** How a mempool is made. */
export interface MempoolOptions {
  readonly limits?: Partial<MempoolLimits>;
  /** The journal that makes admission durable; absent, the pool lives only in memory (tests). */
  readonly store?: MempoolStore;
}

interface Entry {
  readonly hash: string;
  readonly raw: Uint8Array;
  readonly tx: VerifiedEnvelope;
  readonly received: number;
}

/** An admission's outcome; `held` when the transaction waits for the sender's missing lower nonces. */
export type AddResult = TxResult & { hash: string; held?: true };

/** Pending transactions of the proposer. */
export class Mempool {
  readonly #app: LedgerApp;
  readonly #limits: MempoolLimits;
  readonly #store: MempoolStore | null;
  /** Admitted: applied to the projection, in arrival order. */
  #pending = new Map<string, Entry>();
  /** Held future nonces: sender → nonce → entry, and the same entries by hash. */
  readonly #held = new Map<string, Map<number, Entry>>();
  readonly #heldByHash = new Map<string, Entry>();
  readonly #perSender = new Map<string, number>();
  #bytes = 0;
  #projection: Overlay;

  constructor(app: LedgerApp, options: MempoolOptions = {}) {
    this.#app = app;
    this.#limits = { ...MEMPOOL_LIMITS, ...options.limits };
    this.#store = options.store ?? null;
    this.#projection = app.projection();
    if (this.#store) this.#restore(this.#store);
  }

  /** The number of transactions in the pool (admitted and held). */
  get size(): number {
    return this.#pending.size + this.#heldByHash.size;
  }

  /** The raw bytes in the pool. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The number of held future-nonce transactions. */
  get held(): number {
    return this.#heldByHash.size;
  }

  /** True when `hash` is in the pool (admitted or held). */
  has(hash: string): boolean {
    return this.#pending.has(hash) || this.#heldByHash.has(hash);
  }

  /** Admits or holds `raw` if it applies to the projected state; the same bytes twice are admitted once. */
  add(raw: Uint8Array, time: number): AddResult {
    return this.#add(raw, time, time, true);
  }

  /** Resolves once every transaction admitted so far is journaled (at once without a store). */
  durable(): Promise<void> {
    return this.#store?.synced() ?? Promise.resolve();
  }

  /** Admitted raw envelopes in arrival order (each sender's in nonce order). */
  candidates(): Uint8Array[] {
    return [...this.#pending.values()].map((e) => e.raw);
  }

  /** Drops `committed` hashes, re-checks the rest against the newly committed state, promotes and expires held ones. */
  afterCommit(committed: readonly string[], time: number): void {
    const gone: string[] = [];
    for (const h of committed) {
      const e = this.#pending.get(h);
      if (!e) continue;
      this.#pending.delete(h);
      this.#count(e, -1);
      gone.push(h);
    }
    const rest = this.#pending;
    this.#pending = new Map();
    this.#projection = this.#app.projection();
    for (const e of rest.values()) {
      if (this.#apply(e, time).ok) this.#pending.set(e.hash, e);
      else gone.push(this.#drop(e));
    }
    for (const [sender, held] of [...this.#held]) {
      for (const e of [...held.values()]) {
        if (time - e.received > this.#limits.futureTtlMs) {
          this.#unhold(sender, e);
          gone.push(this.#drop(e));
        }
      }
      gone.push(...this.#promote(sender, time));
    }
    this.#store?.delete(gone);
  }

  #restore(store: MempoolStore): void {
    const now = Date.now();
    const gone: string[] = [];
    for (const row of store.rows()) {
      if (this.#app.store.tx(row.hash) || !this.#add(row.raw, now, row.received, false).ok) {
        gone.push(row.hash);
      }
    }
    store.delete(gone.filter((h) => !this.has(h)));
  }

  #add(raw: Uint8Array, time: number, received: number, persist: boolean): AddResult {
    const hash = rawHash(raw);
    if (this.#heldByHash.has(hash)) return { ok: true, hash, held: true };
    if (this.#pending.has(hash)) return { ok: true, hash };
    const full = this.#full(raw.length);
    if (full) return { ...full, hash };
    const v = this.#app.verify(raw);
    if (!v.ok) return { ok: false, code: v.code, message: v.message, hash };
    const sender = v.tx.sender;
    const mine = this.#perSender.get(sender) ?? 0;
    if (mine >= this.#limits.maxPerSender) {
      return {
        ...reject(
          "mempool_full",
          `Cannot admit transaction: sender ${sender} has ${mine} pending, expected fewer than ${this.#limits.maxPerSender}`,
        ),
        hash,
      };
    }
    const entry: Entry = { hash, raw, tx: v.tx, received };
    const child = this.#projection.fork();
    const result = this.#app.checkVerified(v.tx, hash, raw.length, child, time);
    if (result.ok) {
      this.#persist(entry, persist);
      child.mergeInto(this.#projection);
      this.#pending.set(hash, entry);
      this.#count(entry, +1);
      const dropped = this.#promote(sender, time); // not inside `?.`: promotion must run without a store
      this.#store?.delete(dropped);
      return { ok: true, hash };
    }
    if (result.code !== "future_nonce") return { ...result, hash };
    const refused = this.#holdable(v.tx);
    if (refused) return { ...refused, hash };
    this.#persist(entry, persist);
    let held = this.#held.get(sender);
    if (!held) this.#held.set(sender, held = new Map());
    held.set(v.tx.envelope.body.nonce, entry);
    this.#heldByHash.set(hash, entry);
    this.#count(entry, +1);
    return { ok: true, hash, held: true };
  }

  #full(bytes: number): TxResult | null {
    const { maxTxs, maxBytes } = this.#limits;
    if (this.size >= maxTxs) {
      return reject(
        "mempool_full",
        `Cannot admit transaction: ${this.size} are pending, expected fewer than ${maxTxs}`,
      );
    }
    if (this.#bytes + bytes > maxBytes) {
      return reject(
        "mempool_full",
        `Cannot admit transaction: pending bytes would be ${
          this.#bytes + bytes
        }, expected at most ${maxBytes}`,
      );
    }
    return null;
  }

  /** Why a future-nonce transaction cannot be held, or null when it can. */
  #holdable(tx: VerifiedEnvelope): TxResult | null {
    const account = new LedgerView(this.#projection).account(tx.sender);
    const nonce = tx.envelope.body.nonce;
    const window = this.#limits.futureWindow;
    if (nonce >= account.nonce + window) {
      return reject(
        "future_nonce",
        `Cannot hold transaction: nonce is ${nonce}, expected below ${account.nonce + window}`,
      );
    }
    const held = this.#held.get(tx.sender);
    if (held?.has(nonce)) {
      return reject(
        "future_nonce",
        `Cannot hold transaction: nonce ${nonce} of ${tx.sender} is already held`,
      );
    }
    const fees = this.#app.params.fee * ((held?.size ?? 0) + 1);
    if (account.balance < fees) {
      return reject(
        "insufficient_funds",
        `Cannot hold transaction: balance is ${account.balance}, the held transactions' fees are ${fees}`,
      );
    }
    return null;
  }

  /** Moves the sender's held transactions whose gap closed into the pool, in nonce order; returns the dropped. */
  #promote(sender: string, time: number): string[] {
    const held = this.#held.get(sender);
    const gone: string[] = [];
    while (held && held.size > 0) {
      const next = new LedgerView(this.#projection).account(sender).nonce;
      for (const [nonce, e] of [...held]) {
        if (nonce < next) (this.#unhold(sender, e), gone.push(this.#drop(e)));
      }
      const e = held.get(next);
      if (!e) break;
      this.#unhold(sender, e);
      if (this.#apply(e, time).ok) this.#pending.set(e.hash, e);
      else gone.push(this.#drop(e));
    }
    return gone;
  }

  #apply(e: Entry, time: number): TxResult {
    const child = this.#projection.fork();
    const r = this.#app.checkVerified(e.tx, e.hash, e.raw.length, child, time);
    if (r.ok) child.mergeInto(this.#projection);
    return r;
  }

  #unhold(sender: string, e: Entry): void {
    const held = this.#held.get(sender)!;
    held.delete(e.tx.envelope.body.nonce);
    if (held.size === 0) this.#held.delete(sender);
    this.#heldByHash.delete(e.hash);
  }

  /** Forgets an entry that left the pool without committing; returns its hash for the journal. */
  #drop(e: Entry): string {
    this.#count(e, -1);
    this.#app.forget(e.hash);
    return e.hash;
  }

  #persist(e: Entry, persist: boolean): void {
    if (persist) this.#store?.put(e.hash, e.raw, e.received);
  }

  #count(e: Entry, delta: 1 | -1): void {
    this.#bytes += delta * e.raw.length;
    const n = (this.#perSender.get(e.tx.sender) ?? 0) + delta;
    if (n === 0) this.#perSender.delete(e.tx.sender);
    else this.#perSender.set(e.tx.sender, n);
  }
}
