/**
 * The verified-signature cache of a node: envelopes whose signature already checked out, by raw hash, so that
 * a transaction admitted to the mempool is not verified again when its block is applied. Only what the
 * mempool admits is remembered (a rejected envelope is never kept), and the cache is bounded by the raw bytes
 * it holds: adding beyond the bound evicts the least recently used entries first. A miss only costs one
 * verification, so eviction can never change a result.
 *
 * @example
 * ```ts
 * const cache = new SignatureCache(64 * 1024 * 1024);
 * cache.set(hash, verified, raw.length);
 * cache.get(hash); // verified, now the most recently used
 * ```
 */
import type { VerifiedEnvelope } from "./envelope.ts";

/** The default bound: the mempool's byte bound, so every admitted envelope fits. */
export const SIG_CACHE_BYTES = 64 * 1024 * 1024;

/** A least-recently-used map from raw hash to verified envelope, bounded by bytes. */
export class SignatureCache {
  readonly #limit: number;
  readonly #entries = new Map<string, { tx: VerifiedEnvelope; bytes: number }>();
  #bytes = 0;

  constructor(limitBytes = SIG_CACHE_BYTES) {
    this.#limit = limitBytes;
  }

  /** How many raw bytes the cached envelopes came from. */
  get bytes(): number {
    return this.#bytes;
  }

  /** How many envelopes are cached. */
  get size(): number {
    return this.#entries.size;
  }

  /** The verified envelope of `hash`, marking it recently used; undefined on a miss. */
  get(hash: string): VerifiedEnvelope | undefined {
    const hit = this.#entries.get(hash);
    if (!hit) return undefined;
    this.#entries.delete(hash);
    this.#entries.set(hash, hit);
    return hit.tx;
  }

  /** Remembers `tx` (decoded from `bytes` raw bytes); an envelope larger than the whole bound is not kept. */
  set(hash: string, tx: VerifiedEnvelope, bytes: number): void {
    this.delete(hash);
    if (bytes > this.#limit) return;
    while (this.#bytes + bytes > this.#limit) this.delete(this.#entries.keys().next().value!);
    this.#entries.set(hash, { tx, bytes });
    this.#bytes += bytes;
  }

  /** Forgets `hash` (committed or dropped from the mempool). */
  delete(hash: string): void {
    const hit = this.#entries.get(hash);
    if (!hit) return;
    this.#entries.delete(hash);
    this.#bytes -= hit.bytes;
  }
}
