/**
 * The integer serving gate of PROTOCOL §7, as pure functions with exact arithmetic.
 *
 * Losses are float64 values committed as hex floats. A document's loss is the target-weighted mean of its
 * window losses computed as an exact rational and rounded once to float64 (nearest, ties to even);
 * `q(x) = floor(x · 10^6)` of the exact binary value of x; a group of n paired documents passes iff
 * `G > 0 and G²·10^6·(n−1) > 2576²·Q` with `d_i = q(cand_i) − q(base_i)`, `S = Σd`, `Q = n·Σd² − S²`,
 * `G = (m − 2)·n − S`. Everything past the float64 inputs is BigInt, so no product can lose a bit.
 *
 * @example
 * ```ts
 * import { microQ, groupGate, RETENTION_MARGIN } from "./gate.ts";
 * microQ(1.9); // 1899999n (1.9 is 1.899999999999999911182… in binary)
 * groupGate(Array(32).fill(2_000_000n), Array(32).fill(1_899_999n), RETENTION_MARGIN).pass; // true
 * ```
 */

/** Margin m for the retention group, in micronats: the candidate may be at most this much worse. */
export const RETENTION_MARGIN = 20_000n;
/** Margin m for the fresh group, in micronats: the candidate must be more than this much better. */
export const FRESH_MARGIN = -1_000n;
/** The z value 2.576 in thousandths, squared against Q. */
export const GATE_Z = 2_576n;

const view = new DataView(new ArrayBuffer(8));

/** The exact binary value of a finite float64 as `mantissa · 2^exponent` with an integer mantissa. */
export function exactBinary(x: number): { mantissa: bigint; exponent: number } {
  if (!Number.isFinite(x)) throw new RangeError(`Cannot take the exact value of ${x}: it is not finite`);
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const negative = bits >> 63n === 1n;
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const mantissa = biased === 0 ? fraction : fraction | (1n << 52n);
  const exponent = (biased === 0 ? 1 : biased) - 1075;
  return { mantissa: negative ? -mantissa : mantissa, exponent };
}

/** `floor(a / b)` for BigInts with `b > 0`, rounding toward −∞ (BigInt `/` truncates toward zero). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

/** `q(x) = floor(x · 10^6)` of the exact binary value of a finite float64. */
export function microQ(x: number): bigint {
  const { mantissa, exponent } = exactBinary(x);
  const scaled = mantissa * 1_000_000n;
  return exponent >= 0 ? scaled << BigInt(exponent) : floorDiv(scaled, 1n << BigInt(-exponent));
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** The float64 nearest to `num / den` (ties to even), exactly; `den > 0`. Throws when it would overflow. */
export function ratioToFloat64(num: bigint, den: bigint): number {
  if (den <= 0n) throw new RangeError(`Cannot round ${num}/${den}: the denominator is not positive`);
  if (num === 0n) return 0;
  const negative = num < 0n;
  const n = negative ? -num : num;
  // Choose k so that floor(n·2^k / den) has 53 bits; capped at 1074 for subnormals.
  let k = 53 - (bitLength(n) - bitLength(den));
  const quotient = (shift: number) => {
    const a = shift >= 0 ? n << BigInt(shift) : n;
    const b = shift >= 0 ? den : den << BigInt(-shift);
    return { q: a / b, r: a % b, b };
  };
  let t = quotient(k);
  if (t.q >= 1n << 53n) t = quotient(--k);
  else if (t.q < 1n << 52n) t = quotient(++k);
  if (k > 1074) {
    k = 1074;
    t = quotient(k);
  }
  let q = t.q;
  const twice = 2n * t.r;
  if (twice > t.b || (twice === t.b && (q & 1n) === 1n)) q += 1n;
  if (q === 1n << 53n) {
    q >>= 1n;
    k -= 1;
  }
  if (-k + 52 > 1023) throw new RangeError(`Cannot round ${num}/${den}: it overflows float64`);
  // q < 2^53 is exact as a number; scaling by a power of two in range is exact. Split to avoid 2^-1074·2^… issues.
  const value = k > 1000 ? Number(q) * 2 ** -1000 * 2 ** -(k - 1000) : Number(q) * 2 ** -k;
  return negative ? -value : value;
}

/** A document's loss: the target-weighted mean of its window losses, exact, rounded once to float64. */
export function documentLoss(windows: readonly { loss: number; targets: number }[]): number {
  if (windows.length === 0) throw new RangeError("Cannot compute a document loss: it has no windows");
  const parts = windows.map((w) => {
    if (!Number.isSafeInteger(w.targets) || w.targets < 1) {
      throw new RangeError(`Cannot compute a document loss: a window has ${w.targets} targets`);
    }
    return { ...exactBinary(w.loss), targets: BigInt(w.targets) };
  });
  const low = Math.min(...parts.map((p) => p.exponent));
  let num = 0n;
  let total = 0n;
  for (const p of parts) {
    num += p.mantissa * p.targets << BigInt(p.exponent - low);
    total += p.targets;
  }
  // value = num · 2^low / total
  return low >= 0 ? ratioToFloat64(num << BigInt(low), total) : ratioToFloat64(num, total << BigInt(-low));
}

/** The gate's integers for one group and whether it passes; values are decimal strings for canonical JSON. */
export type GateResult = {
  readonly pass: boolean;
  readonly S: string;
  readonly Q: string;
  readonly G: string;
};

/** Applies the gate to one group of paired q values (baseline, candidate) with margin m in micronats. */
export function groupGate(base: readonly bigint[], cand: readonly bigint[], margin: bigint): GateResult {
  if (base.length !== cand.length || base.length < 2) {
    throw new RangeError(`Cannot gate: ${base.length} baseline and ${cand.length} candidate documents`);
  }
  const n = BigInt(base.length);
  let s = 0n;
  let squares = 0n;
  for (let i = 0; i < base.length; i++) {
    const d = cand[i]! - base[i]!;
    s += d;
    squares += d * d;
  }
  const q = n * squares - s * s;
  const g = (margin - 2n) * n - s;
  const pass = g > 0n && g * g * 1_000_000n * (n - 1n) > GATE_Z * GATE_Z * q;
  return { pass, S: s.toString(), Q: q.toString(), G: g.toString() };
}
