/**
 * A linear layer without bias, y = x·Wᵀ with W stored [out, in] as in Hugging Face checkpoints. Every product
 * goes through `matmul` (k ascending, float32 rounding after each multiply and add).
 *
 * @example
 * ```ts
 * import { linearForward } from "./linear.ts";
 * const y = linearForward(new Float32Array([1, 2]), new Float32Array([1, 0, 0, 1, 1, 1]), 1, 2, 3); // [1, 2, 3]
 * ```
 */
import { matmulFinite, matmulGroupFinite } from "./matmul.ts";
import { assertFinite } from "./tensor.ts";

/** x [N,I], W [O,I] → y [N,O] = x·Wᵀ. */
export function linearForward(
  x: Float32Array,
  w: Float32Array,
  N: number,
  I: number,
  O: number,
): Float32Array {
  const y = new Float32Array(N * O); // y: [N,O]
  if (!matmulFinite(x, w, y, N, I, O, "nt")) assertFinite(y, "linear output"); // throws at the first
  return y;
}

/**
 * x [N,I], each W_g [O_g,I] → y_g [N,O_g] = x·W_gᵀ: the layers of one input (q, k and v; gate and up) in one
 * matmul call (`matmulGroupFinite`), each y_g the bits of `linearForward(x, W_g, N, I, O_g)` and the same
 * error for the first that is not finite.
 */
export function linearForwardGroup<W extends readonly Float32Array[]>(
  x: Float32Array,
  ws: W,
  N: number,
  I: number,
  Os: { readonly [G in keyof W]: number },
): { [G in keyof W]: Float32Array } {
  const ys = Os.map((O) => new Float32Array(N * O)); // y_g: [N,O_g]
  const finite = matmulGroupFinite(x, ws, ys, N, I, Os);
  ys.forEach((y, g) => {
    if (!finite[g]) assertFinite(y, "linear output"); // throws at the first
  });
  return ys as { [G in keyof W]: Float32Array };
}

/**
 * dy [N,O] → dx [N,I] = dy·W and dW [O,I] = dyᵀ·x (sums over the N positions ascending). `dwOut`, when
 * given, is where dW is written (e.g. a view into the file the gradient will be committed in).
 */
export function linearBackward(
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array,
  N: number,
  I: number,
  O: number,
  dwOut?: Float32Array,
): { dx: Float32Array; dw: Float32Array } {
  if (dwOut !== undefined && dwOut.length !== O * I) {
    throw new RangeError(
      `Cannot write the weight gradient: it has ${dwOut.length} elements, expected ${O * I}`,
    );
  }
  const dx = new Float32Array(N * I); // dx: [N,I]
  const dxFinite = matmulFinite(dy, w, dx, N, O, I, "nn");
  const dw = dwOut ?? new Float32Array(O * I); // dw: [O,I]
  const dwFinite = matmulFinite(dy, x, dw, O, N, I, "tn");
  if (!dxFinite) assertFinite(dx, "linear input gradient"); // throws at the first non-finite element
  if (!dwFinite) assertFinite(dw, "linear weight gradient");
  return { dx, dw };
}
