/**
 * Our own transcendental functions, so that results never depend on the JavaScript engine's `Math.exp` and
 * friends (which differ between engines and versions). Everything here uses only IEEE-754 float64 `+ - * /`
 * (correctly rounded by the language), `Math.sqrt` (correctly rounded), `Math.fround`, exact operations
 * (`Math.floor`, comparisons) and reading/writing a float's bits. No `Math.exp`, `Math.log`, `Math.sin`,
 * `Math.cos` or `Math.pow` anywhere.
 *
 * The float64 functions (`exp64`, `log64`, `sin64`, `cos64`) are accurate to a few float64 ulps, so their
 * `Math.fround` is the correctly rounded float32 result for almost every input; the float32 wrappers (`expf`,
 * ...) are exactly that rounding. The algorithms (range reduction, then a fixed polynomial evaluated by
 * Horner's rule in a fixed order) are the definition and part of consensus:
 *
 * - `exp64(x)`: k = floor(x·log2(e) + 1/2); r = (x − k·ln2_hi) − k·ln2_lo (|r| ≤ 0.35, k·ln2_hi exact);
 *   exp(r) by its Taylor polynomial to degree 13; times 2^k built from bits. exp(x) = +Infinity above
 *   709.78 and +0 below −745.2.
 * - `log64(x)`: x = m·2^e with m in [√½, √2) (from the bits; subnormals scaled by 2^54 first);
 *   s = (m − 1)/(m + 1); log m = 2s·(1 + s²/3 + … + s²²/23); log x = e·ln2_hi + (e·ln2_lo + log m).
 *   log(0) = −Infinity, log of a negative number or NaN is NaN.
 * - `sin64`/`cos64(x)`: n = floor(x·2/π + 1/2); r = ((x − n·p1) − n·p2) − n·p3 with π/2 = p1 + p2 + p3 split
 *   so n·p1 and n·p2 are exact (Cody–Waite, |n| < 2^20, i.e. |x| ≤ 1.6e6, else `invalid_tensor`);
 *   sin r and cos r by Taylor polynomials to degree 17 and 18; the quadrant n mod 4 picks ±sin r or ±cos r.
 *
 * @example
 * ```ts
 * import { expf, log64 } from "./math.ts";
 * expf(1); // 2.7182817459106445 (the float32 nearest e)
 * log64(1); // 0
 * ```
 */
import { ProtocolError } from "../core/errors.ts";

const bits = new DataView(new ArrayBuffer(8));

/** 2^k for every integer k in [−1022, 1023], built once from its bits (exact): POW2[k + 1022]. */
const POW2: Float64Array = (() => {
  const out = new Float64Array(2046);
  for (let k = -1022; k <= 1023; k++) {
    bits.setUint32(0, (k + 1023) << 20);
    bits.setUint32(4, 0);
    out[k + 1022] = bits.getFloat64(0);
  }
  return out;
})();

/** 2^k for an integer k in [−1022, 1023] (exact). */
function pow2(k: number): number {
  return POW2[k + 1022]!;
}

const LN2_HI = 6.93147180369123816490e-01; // 0x3fe62e42fee00000: low 32 bits zero, so k·LN2_HI is exact
const LN2_LO = 1.90821492927058770002e-10; // ln 2 − LN2_HI
const LOG2_E = 1.44269504088896338700e+00;

/** 1/n! for n = 0 … 18, computed once by exact-order divisions. */
const INV_FACT: number[] = (() => {
  const out = [1];
  for (let n = 1; n <= 18; n++) out.push(out[n - 1]! / n);
  return out;
})();

/** e^x in float64 (see the module comment for the algorithm). */
export function exp64(x: number): number {
  if (x !== x) return NaN;
  if (x > 709.782712893384) return Infinity;
  if (x < -745.2) return 0;
  const k = Math.floor(x * LOG2_E + 0.5);
  const r = (x - k * LN2_HI) - k * LN2_LO;
  let p = INV_FACT[13]!;
  for (let n = 12; n >= 0; n--) p = p * r + INV_FACT[n]!;
  if (k > 1023) return p * pow2(k - 1) * 2;
  if (k < -1020) return p * pow2(k + 60) * pow2(-60);
  return p * pow2(k);
}

const SQRT_HALF = 0.70710678118654752440;

/** Natural logarithm in float64 (see the module comment for the algorithm). */
export function log64(x: number): number {
  if (x !== x || x < 0) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return Infinity;
  let e = 0;
  if (x < 2.2250738585072014e-308) {
    x *= 18014398509481984; // 2^54, exact
    e = -54;
  }
  bits.setFloat64(0, x);
  const hi = bits.getUint32(0);
  e += ((hi >>> 20) & 0x7ff) - 1023;
  bits.setUint32(0, (hi & 0x800fffff) | 0x3ff00000); // same mantissa, exponent 0: m in [1, 2)
  let m = bits.getFloat64(0);
  if (m >= 2 * SQRT_HALF) {
    m = m / 2;
    e += 1;
  }
  const s = (m - 1) / (m + 1);
  const z = s * s;
  let p = 1 / 23;
  for (let n = 21; n >= 1; n -= 2) p = p * z + 1 / n;
  const logm = 2 * s * p;
  return e * LN2_HI + (e * LN2_LO + logm);
}

// π/2 = P1 + P2 + P3 (fdlibm's pio2_1, pio2_2, pio2_3): P1 and P2 have 33 significant bits.
const P1 = 1.57079632673412561417e+00;
const P2 = 6.07710050630396597660e-11;
const P3 = 2.02226624871116645580e-21;
const TWO_OVER_PI = 6.36619772367581382433e-01;
const MAX_TRIG = 1.6e6;

function reduce(x: number, what: string): [number, number] {
  if (!(Math.abs(x) <= MAX_TRIG)) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot compute ${what}: argument is ${x}, expected |x| <= ${MAX_TRIG}`,
    );
  }
  const n = Math.floor(x * TWO_OVER_PI + 0.5);
  const r = ((x - n * P1) - n * P2) - n * P3;
  return [r, ((n % 4) + 4) % 4];
}

function sinPoly(r: number): number {
  const z = r * r;
  let p = INV_FACT[17]!;
  for (let n = 15; n >= 1; n -= 2) p = -p * z + INV_FACT[n]!;
  return r * p;
}

function cosPoly(r: number): number {
  const z = r * r;
  let p = INV_FACT[18]!;
  for (let n = 16; n >= 0; n -= 2) p = -p * z + INV_FACT[n]!;
  return p;
}

/** sin x in float64 for |x| ≤ 1.6e6 (see the module comment). */
export function sin64(x: number): number {
  const [r, q] = reduce(x, "sin");
  return q === 0 ? sinPoly(r) : q === 1 ? cosPoly(r) : q === 2 ? -sinPoly(r) : -cosPoly(r);
}

/** cos x in float64 for |x| ≤ 1.6e6 (see the module comment). */
export function cos64(x: number): number {
  const [r, q] = reduce(x, "cos");
  return q === 0 ? cosPoly(r) : q === 1 ? -sinPoly(r) : q === 2 ? -cosPoly(r) : sinPoly(r);
}

/** e^x rounded to float32. */
export function expf(x: number): number {
  return Math.fround(exp64(x));
}

/** log x rounded to float32. */
export function logf(x: number): number {
  return Math.fround(log64(x));
}

/** sin x rounded to float32. */
export function sinf(x: number): number {
  return Math.fround(sin64(x));
}

/** cos x rounded to float32. */
export function cosf(x: number): number {
  return Math.fround(cos64(x));
}

/** 1/√x rounded to float32: the float64 quotient of 1 by the correctly rounded float64 square root. */
export function rsqrtf(x: number): number {
  return Math.fround(1 / Math.sqrt(x));
}

/** base^y in float64 as exp(y·log base), for base > 0 (used for rotary frequencies θ^(−2i/D)). */
export function pow64(base: number, y: number): number {
  return exp64(y * log64(base));
}
