/**
 * The proposer's mempool: raw envelopes in arrival order, each admitted by `checkTx` against the projected
 * state (the committed state plus every transaction already admitted), so a second spend of the same nonce or
 * of the same money is refused at the door. After each commit the remaining transactions are re-checked
 * against the new state and those that no longer apply are dropped.
 */
import type { LedgerApp } from "../app.ts";
import { rawHash } from "../envelope.ts";
import type { Overlay } from "../state/overlay.ts";
import type { TxResult } from "../state/store.ts";

/** The default bound on pending transactions. */
export const MAX_MEMPOOL_TXS = 50_000;

/** Pending transactions of the proposer. */
export class Mempool {
  readonly #app: LedgerApp;
  readonly #limit: number;
  #pending = new Map<string, Uint8Array>();
  #projection: Overlay;

  constructor(app: LedgerApp, limit = MAX_MEMPOOL_TXS) {
    this.#app = app;
    this.#limit = limit;
    this.#projection = app.projection();
  }

  /** The number of pending transactions. */
  get size(): number {
    return this.#pending.size;
  }

  /** True when `hash` is pending. */
  has(hash: string): boolean {
    return this.#pending.has(hash);
  }

  /** Admits `raw` if it applies to the projected state; the same bytes twice are admitted once. */
  add(raw: Uint8Array, time: number): TxResult & { hash: string } {
    const hash = rawHash(raw);
    if (this.#pending.has(hash)) return { ok: true, hash };
    if (this.#pending.size >= this.#limit) {
      return {
        ok: false,
        code: "mempool_full",
        message: `Cannot admit transaction: ${this.#limit} are pending`,
        hash,
      };
    }
    const result = this.#app.checkTx(raw, this.#projection, time);
    if (result.ok) this.#pending.set(hash, raw);
    return result;
  }

  /** Pending raw envelopes in arrival order. */
  candidates(): Uint8Array[] {
    return [...this.#pending.values()];
  }

  /** Drops `committed` hashes and re-checks the rest against the newly committed state. */
  afterCommit(committed: readonly string[], time: number): void {
    for (const h of committed) this.#pending.delete(h);
    const rest = this.#pending;
    this.#pending = new Map();
    this.#projection = this.#app.projection();
    for (const [hash, raw] of rest) {
      const r = this.#app.checkTx(raw, this.#projection, time);
      if (r.ok) this.#pending.set(hash, raw);
    }
  }
}
