/**
 * The devnet generator's randomness: a 32-bit integer hash of (version, seed, row) seeds a small PRNG, so row
 * i is computed directly from its number without touching rows 0..i-1, and never from `Math.random`.
 *
 * @example
 * ```ts
 * import { rowRandom } from "./prng.ts";
 * const r = rowRandom("v1", "seed", 42);
 * r.below(10); // the same integer in every process
 * ```
 */

/** FNV-1a over the UTF-16 code units of a string, 32 bits. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The murmur3 finaliser: a bijective 32-bit mix. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** A deterministic source of integers for one row. */
export interface RowRandom {
  /** The next 32-bit unsigned integer. */
  next(): number;
  /** An integer in [0, n) (n at most 2^32), by rejection so every value is equally likely. */
  below(n: number): number;
  /** An integer in [lo, hi]. */
  between(lo: number, hi: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
}

/** The random source of `row` (a safe integer >= 0) under a generator version and seed. */
export function rowRandom(version: string, seed: string, row: number): RowRandom {
  if (!Number.isSafeInteger(row) || row < 0) {
    throw new RangeError(`Cannot generate row ${row}: not a row number`);
  }
  const lo = row >>> 0;
  const hi = Math.floor(row / 0x1_0000_0000) >>> 0;
  let state = mix32(hashString(version) ^ mix32(hashString(seed) ^ mix32(lo ^ mix32(hi + 0x9e3779b9))));
  const next = (): number => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  const below = (n: number): number => {
    if (!Number.isSafeInteger(n) || n < 1 || n > 0x1_0000_0000) {
      throw new RangeError(`Cannot draw below ${n}`);
    }
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % n);
    for (;;) {
      const x = next();
      if (x < limit) return x % n;
    }
  };
  return {
    next,
    below,
    between: (lo2, hi2) => lo2 + below(hi2 - lo2 + 1),
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError("Cannot pick from an empty list");
      return items[below(items.length)]!;
    },
  };
}
