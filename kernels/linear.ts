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
import { matmul, matmulContinue, matmulFinite, matmulGroupFinite, validateMatmul } from "./matmul.ts";
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

/** Refuses a `dwOut` that cannot hold dW [O,I], before anything is computed. */
function checkGradientOut(dwOut: Float32Array | undefined, O: number, I: number): void {
  if (dwOut !== undefined && dwOut.length !== O * I) {
    throw new RangeError(
      `Cannot write the weight gradient: it has ${dwOut.length} elements, expected ${O * I}`,
    );
  }
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
  checkGradientOut(dwOut, O, I);
  const dx = new Float32Array(N * I); // dx: [N,I]
  const dxFinite = matmulFinite(dy, w, dx, N, O, I, "nn");
  const dw = dwOut ?? new Float32Array(O * I); // dw: [O,I]
  const dwFinite = matmulFinite(dy, x, dw, O, N, I, "tn");
  if (!dxFinite) assertFinite(dx, "linear input gradient"); // throws at the first non-finite element
  if (!dwFinite) assertFinite(dw, "linear weight gradient");
  return { dx, dw };
}

/**
 * `linearForward(x, w, N, I, O)` computed `rows` output features at a time: each slice of W's rows is one
 * matmul into a slice of y's columns, so the kernels' memory holds one slice of W (not all of a vocabulary's
 * head). Every element is the same sum, so the bits are `linearForward`'s, and so is the error.
 */
export function linearForwardByRows(
  x: Float32Array,
  w: Float32Array,
  N: number,
  I: number,
  O: number,
  rows: number,
): Float32Array {
  if (O <= rows) return linearForward(x, w, N, I, O);
  const y = new Float32Array(N * O); // y: [N,O]
  validateMatmul(x, w, y, N, I, O, "nt"); // the whole product's errors, before any slice runs
  const part = new Float32Array(N * rows); // part: [N,s], the slice's columns of y
  let finite = true;
  for (let o0 = 0; o0 < O; o0 += rows) {
    const s = Math.min(rows, O - o0);
    finite = matmulFinite(x, w.subarray(o0 * I, (o0 + s) * I), part, N, I, s, "nt") && finite;
    for (let n = 0; n < N; n++) y.set(part.subarray(n * s, (n + 1) * s), n * O + o0);
  }
  if (!finite) assertFinite(y, "linear output"); // throws at the first
  return y;
}

/**
 * `linearBackward(dy, x, w, N, I, O, dwOut)` computed `rows` output features at a time, with the same bits
 * and errors: for each slice of W's rows, dy's columns of the slice are gathered once; dW's rows of the slice
 * are one matmul (each element's sum over the N positions is unchanged), and dx = dy·W continues its sums over
 * the slice (`matmulContinue`: the first slice from +0, each next from where the last left them), so every
 * element of dx is still one sum over the O features in ascending order.
 */
export function linearBackwardByRows(
  dy: Float32Array,
  x: Float32Array,
  w: Float32Array,
  N: number,
  I: number,
  O: number,
  rows: number,
  dwOut?: Float32Array,
): { dx: Float32Array; dw: Float32Array } {
  if (O <= rows) return linearBackward(dy, x, w, N, I, O, dwOut);
  checkGradientOut(dwOut, O, I);
  const dx = new Float32Array(N * I); // dx: [N,I]
  const dw = dwOut ?? new Float32Array(O * I); // dw: [O,I]
  validateMatmul(dy, w, dx, N, O, I, "nn"); // the whole products' errors, before any slice runs
  validateMatmul(dy, x, dw, O, N, I, "tn");
  const part = new Float32Array(N * rows); // part: [N,s], dy's columns of the slice
  let dxFinite = true, dwFinite = true;
  for (let o0 = 0; o0 < O; o0 += rows) {
    const s = Math.min(rows, O - o0);
    for (let n = 0; n < N; n++) part.set(dy.subarray(n * O + o0, n * O + o0 + s), n * s);
    const ws = w.subarray(o0 * I, (o0 + s) * I); // ws: [s,I]
    if (o0 === 0) matmul(part, ws, dx, N, s, I, "nn");
    else dxFinite = matmulContinue(part, ws, dx, N, s, I, "nn", true); // the last slice's check is dx's
    dwFinite = matmulFinite(part, x, dw.subarray(o0 * I, (o0 + s) * I), s, N, I, "tn") && dwFinite;
  }
  // A sum that is not finite stays so (±Infinity plus anything is ±Infinity or NaN), so the last check tells.
  if (!dxFinite) assertFinite(dx, "linear input gradient"); // throws at the first
  if (!dwFinite) assertFinite(dw, "linear weight gradient");
  return { dx, dw };
}
