/**
 * RMSNorm, Llama's normalisation: y = w ⊙ (x · r) with r = 1/√(mean(x²) + eps), per row.
 *
 * Float32 definition per row of width C (every step rounded to float32, sums in ascending c from +0):
 * `ss = Σ x²`, `ms = ss / C`, `r = rsqrtf(ms + eps)`, `xn = x·r`, `y = w·xn`. Backward:
 * `dw = Σ_rows dy·xn` (rows ascending), `dxn = dy·w`, `dot = Σ_c dxn·xn`, `m = dot / C`,
 * `dx = r·(dxn − xn·m)`. A row whose `ss` overflows to infinity is `non_finite_tensor` (it would otherwise
 * normalise to zeros silently).
 *
 * @example
 * ```ts
 * import { rmsnormForward } from "./rmsnorm.ts";
 * const { y } = rmsnormForward(new Float32Array([3, 4]), new Float32Array([1, 1]), 1, 2, 0);
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { testHook } from "../core/test_hooks.ts";
import { rsqrtf } from "./math.ts";
import { assertFinite } from "./tensor.ts";

const fr = Math.fround;

/**
 * Test hook `NEURO_TEST_PERTURB_KERNEL=rmsnorm` (`core/test_hooks.ts`; no task grants it): a deliberately wrong
 * kernel whose forward flips the lowest bit of its first output, for the tests of the startup conformance check.
 */
const PERTURBED = testHook("NEURO_TEST_PERTURB_KERNEL") === "rmsnorm";
/** True when the test hook perturbs this kernel's output (paths that bypass `normalise` must then not run). */
export const RMSNORM_PERTURBED: boolean = PERTURBED;

/** What the backward needs from a forward: the normalised rows and each row's r. */
export interface RmsnormCache {
  readonly xn: Float32Array; // xn: [N,C]
  readonly r: Float32Array; // r: [N]
}

/** x [N,C], w [C] → y [N,C] and the cache for the backward. */
export function rmsnormForward(
  x: Float32Array,
  w: Float32Array,
  N: number,
  C: number,
  eps: number,
): { y: Float32Array; cache: RmsnormCache } {
  const xn = new Float32Array(N * C); // xn: [N,C]
  const r = new Float32Array(N); // r: [N]
  return { y: normalise(x, w, N, C, eps, xn, r), cache: { xn, r } };
}

/**
 * x [N,C], w [C] → y [N,C] alone, the bits of `rmsnormForward`'s y, for a forward that no backward follows
 * (generation, the head's logits): it keeps no cache, so it allocates and writes only y.
 */
export function rmsnormOutput(
  x: Float32Array,
  w: Float32Array,
  N: number,
  C: number,
  eps: number,
): Float32Array {
  return normalise(x, w, N, C, eps, null, null);
}

/**
 * The forward's definition: y, and the normalised rows and each row's r into `xn` and `r` when given. The
 * finiteness check of y is folded into the pass that writes it (the error is `assertFinite`'s).
 */
function normalise(
  x: Float32Array,
  w: Float32Array,
  N: number,
  C: number,
  eps: number,
  xn: Float32Array | null,
  r: Float32Array | null,
): Float32Array {
  const epsf = fr(eps);
  const y = new Float32Array(N * C); // y: [N,C]
  const ss = sumsOfSquares(x, N, C);
  let finite = true;
  for (let n = 0; n < N; n++) {
    const o = n * C;
    if (ss[n] === Infinity) {
      throw new ProtocolError(
        "non_finite_tensor",
        `Cannot normalise row ${n}: its sum of squares overflows float32`,
      );
    }
    const rn = rsqrtf(fr(fr(ss[n]! / C) + epsf));
    if (r !== null) r[n] = rn;
    for (let c = 0; c < C; c++) {
      const v = fr(x[o + c]! * rn);
      if (xn !== null) xn[o + c] = v;
      const yc = fr(w[c]! * v);
      y[o + c] = yc;
      if (yc - yc !== 0) finite = false;
    }
  }
  if (PERTURBED && y.length > 0) new Uint32Array(y.buffer, y.byteOffset, 1)[0]! ^= 1;
  if (!finite) assertFinite(y, "rmsnorm output"); // throws, naming the first non-finite element
  return y;
}

/**
 * Each row's `ss = Σ x²` (float32, c ascending from +0). Four rows are summed side by side: each sum is
 * still its own chain in c order, but the four chains overlap in the processor (one chain is bound by the
 * latency of its rounded multiply-adds), the same bits in about a third of the time.
 */
function sumsOfSquares(x: Float32Array, N: number, C: number): Float64Array {
  const ss = new Float64Array(N);
  let n = 0;
  for (; n + 4 <= N; n += 4) {
    const o0 = n * C, o1 = o0 + C, o2 = o1 + C, o3 = o2 + C;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (let c = 0; c < C; c++) {
      const a = x[o0 + c]!, b = x[o1 + c]!, d = x[o2 + c]!, e = x[o3 + c]!;
      s0 = fr(s0 + fr(a * a));
      s1 = fr(s1 + fr(b * b));
      s2 = fr(s2 + fr(d * d));
      s3 = fr(s3 + fr(e * e));
    }
    ss[n] = s0;
    ss[n + 1] = s1;
    ss[n + 2] = s2;
    ss[n + 3] = s3;
  }
  for (; n < N; n++) {
    const o = n * C;
    let s = 0;
    for (let c = 0; c < C; c++) s = fr(s + fr(x[o + c]! * x[o + c]!));
    ss[n] = s;
  }
  return ss;
}

/** dy [N,C] → dx [N,C] and dw [C], using the forward's cache and weight w [C]. */
export function rmsnormBackward(
  dy: Float32Array,
  w: Float32Array,
  cache: RmsnormCache,
  N: number,
  C: number,
): { dx: Float32Array; dw: Float32Array } {
  const { xn, r } = cache;
  const dx = new Float32Array(N * C); // dx: [N,C]
  const dw = new Float32Array(C); // dw: [C]
  const dxn = new Float32Array(C); // dxn: [C], one row at a time
  for (let n = 0; n < N; n++) {
    const o = n * C;
    let dot = 0;
    for (let c = 0; c < C; c++) {
      dw[c] = fr(dw[c]! + fr(dy[o + c]! * xn[o + c]!));
      dxn[c] = fr(dy[o + c]! * w[c]!);
      dot = fr(dot + fr(dxn[c]! * xn[o + c]!));
    }
    const m = fr(dot / C);
    const rn = r[n]!;
    for (let c = 0; c < C; c++) dx[o + c] = fr(rn * fr(dxn[c]! - fr(xn[o + c]! * m)));
  }
  assertFinite(dx, "rmsnorm input gradient");
  assertFinite(dw, "rmsnorm weight gradient");
  return { dx, dw };
}
