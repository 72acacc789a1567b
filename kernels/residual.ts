/**
 * Residual connections: y = a + b elementwise, rounded to float32. The backward passes the gradient to both
 * inputs unchanged; where two gradients meet (a residual stream and a branch) they are merged by `addForward`
 * in the order the callers document.
 *
 * @example
 * ```ts
 * import { addForward } from "./residual.ts";
 * addForward(new Float32Array([1, 2]), new Float32Array([0.5, 0.25])); // [1.5, 2.25]
 * ```
 */
import { assertFinite } from "./tensor.ts";

/** a + b elementwise (same length), each sum rounded to float32, in a new array. */
export function addForward(a: Float32Array, b: Float32Array): Float32Array {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.fround(a[i]! + b[i]!);
  assertFinite(out, "sum");
  return out;
}

/** The gradients of both addends of y = a + b: dy itself (shared, not copied). */
export function addBackward(dy: Float32Array): { da: Float32Array; db: Float32Array } {
  return { da: dy, db: dy };
}
