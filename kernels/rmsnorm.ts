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
  const epsf = fr(eps);
  const y = new Float32Array(N * C); // y: [N,C]
  const xn = new Float32Array(N * C); // xn: [N,C]
  const r = new Float32Array(N); // r: [N]
  for (let n = 0; n < N; n++) {
    const o = n * C;
    let ss = 0;
    for (let c = 0; c < C; c++) ss = fr(ss + fr(x[o + c]! * x[o + c]!));
    if (ss === Infinity) {
      throw new ProtocolError(
        "non_finite_tensor",
        `Cannot normalise row ${n}: its sum of squares overflows float32`,
      );
    }
    const rn = rsqrtf(fr(fr(ss / C) + epsf));
    r[n] = rn;
    for (let c = 0; c < C; c++) {
      const v = fr(x[o + c]! * rn);
      xn[o + c] = v;
      y[o + c] = fr(w[c]! * v);
    }
  }
  if (PERTURBED && y.length > 0) new Uint32Array(y.buffer, y.byteOffset, 1)[0]! ^= 1;
  assertFinite(y, "rmsnorm output");
  return { y, cache: { xn, r } };
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
