/**
 * The SiLU-gated MLP: y = down(silu(gate(x)) ⊙ up(x)).
 *
 * Float32 definition per element (the sigmoid is evaluated in float64 and only its uses are rounded):
 * `σ = 1/(1 + exp64(−g))`, `a = fround(g·σ)`, `h = fround(a·u)`. Backward: `dh = dy·Wd`, `dWd = dyᵀ·h`,
 * `du = fround(dh·a)`, `da = fround(dh·u)`, `dg = fround(da · fround(σ·(1 + g·(1 − σ))))`,
 * `dx = fround(dg·Wg + du·Wu)` (the gate's product first), `dWg = dgᵀ·x`, `dWu = duᵀ·x`.
 *
 * @example
 * ```ts
 * import { mlpForward } from "./mlp.ts";
 * const C = 2, M = 3, x = new Float32Array([1, -1]);
 * const w = { gate: new Float32Array(M * C).fill(0.5), up: new Float32Array(M * C).fill(1), down: new Float32Array(C * M).fill(1) };
 * const { y } = mlpForward(x, w, 1, C, M);
 * ```
 */
import { linearBackward, linearForward, linearForwardGroup } from "./linear.ts";
import { exp64 } from "./math.ts";
import { addForward } from "./residual.ts";
import { FORCE_REFERENCE } from "./matmul.ts";
import { assertFinite } from "./tensor.ts";
import { wasmSilu, wasmSiluBackward, wasmSiluChecked } from "./wasm/softmax_wasm.ts";

const fr = Math.fround;

/** The three projections: gate and up [M,C], down [C,M]. */
export interface MlpWeights {
  readonly gate: Float32Array;
  readonly up: Float32Array;
  readonly down: Float32Array;
}

/** What the backward needs: the gate and up outputs and the gated product. */
export interface MlpCache {
  readonly g: Float32Array; // g: [N,M]
  readonly u: Float32Array; // u: [N,M]
  readonly h: Float32Array; // h: [N,M]
}

function sigmoid64(x: number): number {
  return 1 / (1 + exp64(-x));
}

/** h = fround(fround(g·sigmoid(g))·u) elementwise: on the kernel threads when available, else here. */
export function gatedProduct(g: Float32Array, u: Float32Array): Float32Array {
  if (!FORCE_REFERENCE && g.length >= SILU_MIN_ELEMENTS) {
    const h = wasmSilu(g, u);
    if (h !== null) return h;
  }
  return gatedProductReference(g, u);
}

/**
 * `gatedProduct`, then throws `non_finite_tensor` naming `what` and its first element that is not finite
 * (`assertFinite`'s error); on the kernels the check is one SIMD pass before h is copied out.
 */
function gatedProductFinite(g: Float32Array, u: Float32Array, what: string): Float32Array {
  if (!FORCE_REFERENCE && g.length >= SILU_MIN_ELEMENTS) {
    const r = wasmSiluChecked(g, u);
    if (r !== null) {
      if (!r.finite) assertFinite(r.h, what); // names the first element that is not finite
      return r.h;
    }
  }
  const h = gatedProductReference(g, u);
  assertFinite(h, what);
  return h;
}

/** `gatedProduct` by the plain loop that is the definition. */
export function gatedProductReference(g: Float32Array, u: Float32Array): Float32Array {
  const h = new Float32Array(g.length);
  for (let i = 0; i < h.length; i++) {
    const gi = g[i]!;
    h[i] = fr(fr(gi * sigmoid64(gi)) * u[i]!);
  }
  return h;
}

/** The gated product's backward: du and dg from g, u and dh, on the kernel threads when available. */
export function gatedProductBackward(
  g: Float32Array,
  u: Float32Array,
  dh: Float32Array,
): { du: Float32Array; dg: Float32Array } {
  if (!FORCE_REFERENCE && g.length >= SILU_MIN_ELEMENTS) {
    const r = wasmSiluBackward(g, u, dh);
    if (r !== null) return r;
  }
  return gatedProductBackwardReference(g, u, dh);
}

/** `gatedProductBackward` by the plain loop that is the definition. */
export function gatedProductBackwardReference(
  g: Float32Array,
  u: Float32Array,
  dh: Float32Array,
): { du: Float32Array; dg: Float32Array } {
  const dg = new Float32Array(g.length), du = new Float32Array(g.length);
  for (let i = 0; i < g.length; i++) {
    const gi = g[i]!;
    const s = sigmoid64(gi);
    const a = fr(gi * s);
    du[i] = fr(dh[i]! * a);
    const da = fr(dh[i]! * u[i]!);
    dg[i] = fr(da * fr(s * (1 + gi * (1 - s))));
  }
  return { du, dg };
}

/** Below this many elements the gated product stays in the plain loop (copying in costs more). */
export const SILU_MIN_ELEMENTS = 1024;

/** x [N,C] → y [N,C]. */
export function mlpForward(
  x: Float32Array,
  w: MlpWeights,
  N: number,
  C: number,
  M: number,
): { y: Float32Array; cache: MlpCache } {
  const [g, u] = linearForwardGroup(x, [w.gate, w.up] as const, N, C, [M, M]); // g, u: [N,M]
  const h = gatedProductFinite(g, u, "mlp hidden"); // h: [N,M]
  const y = linearForward(h, w.down, N, M, C); // y: [N,C]
  return { y, cache: { g, u, h } };
}

/**
 * dy [N,C] → dx [N,C] and the weight gradients, given the forward's input x and cache. `into`, when given,
 * holds where each weight gradient is written (e.g. views into the file it will be committed in).
 */
export function mlpBackward(
  dy: Float32Array,
  x: Float32Array,
  w: MlpWeights,
  cache: MlpCache,
  N: number,
  C: number,
  M: number,
  into: { readonly [K in keyof MlpWeights]?: Float32Array | undefined } = {},
): { dx: Float32Array; dGate: Float32Array; dUp: Float32Array; dDown: Float32Array } {
  const { g, u, h } = cache;
  const down = linearBackward(dy, h, w.down, N, M, C, into.down); // down.dx: [N,M]
  const dh = down.dx;
  const { du, dg } = gatedProductBackward(g, u, dh); // du, dg: [N,M]
  assertFinite(dg, "mlp gate gradient");
  assertFinite(du, "mlp up gradient");
  const gate = linearBackward(dg, x, w.gate, N, C, M, into.gate);
  const up = linearBackward(du, x, w.up, N, C, M, into.up);
  return { dx: addForward(gate.dx, up.dx), dGate: gate.dw, dUp: up.dw, dDown: down.dw };
}
