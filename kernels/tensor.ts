/**
 * The float32 tensor every kernel works on: a shape and a row-major `Float32Array`.
 *
 * Shape legend used in comments across `kernels/`: `B` batch rows, `T` tokens per row, `N` = B·T token
 * positions, `C` width (hidden size), `V` vocabulary, `H` attention heads, `KVH` key/value heads, `D` head
 * width (C / H), `KV` = KVH·D, `M` MLP width (intermediate size).
 *
 * @example
 * ```ts
 * import { tensor, zeros } from "./tensor.ts";
 * const x = tensor([2, 3], [1, 2, 3, 4, 5, 6]); // x: [2,3]
 * const y = zeros([3]); // y: [3]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";

/** A row-major float32 tensor. `data.length` always equals the product of `shape`. */
export interface Tensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** The number of elements of a shape; `invalid_tensor` when a dimension is not a safe integer >= 1. */
export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 1) {
      throw new ProtocolError("invalid_tensor", `Cannot size tensor: dimension is ${d} in [${shape}]`);
    }
    n *= d;
  }
  if (!Number.isSafeInteger(n)) {
    throw new ProtocolError("invalid_tensor", `Cannot size tensor: [${shape}] has too many elements`);
  }
  return n;
}

/** A tensor over `data` (copied from an array, used as is when a `Float32Array` of the right length). */
export function tensor(shape: readonly number[], data: Float32Array | readonly number[]): Tensor {
  const n = sizeOf(shape);
  const values = data instanceof Float32Array ? data : Float32Array.from(data);
  if (values.length !== n) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot make tensor: ${values.length} values for shape [${shape}], expected ${n}`,
    );
  }
  return { shape: [...shape], data: values };
}

/**
 * `n` zeroed float32 values on a `SharedArrayBuffer` when the runtime has one (else an ordinary array):
 * the same values to every reader, but task workers (`task_pool.ts`) can also read and write them where
 * they are, e.g. to hash or update a model's parameters. For long-lived model tensors (a loaded model).
 */
export function sharedFloat32(n: number): Float32Array {
  return typeof SharedArrayBuffer === "function"
    ? new Float32Array(new SharedArrayBuffer(4 * n))
    : new Float32Array(n);
}

/** A tensor of +0. */
export function zeros(shape: readonly number[]): Tensor {
  return { shape: [...shape], data: new Float32Array(sizeOf(shape)) };
}

/** True when two shapes are equal. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Throws `invalid_tensor` unless `t` has exactly `shape`; `what` names it in the message. */
export function expectShape(t: Tensor, shape: readonly number[], what: string): void {
  if (!sameShape(t.shape, shape)) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot use ${what}: shape is [${t.shape}], expected [${shape}]`,
    );
  }
}

/** Throws `non_finite_tensor` when any value of `data` is NaN or infinite; `what` names it. */
export function assertFinite(data: Float32Array, what: string): void {
  const i = firstNonFinite(data);
  if (i >= 0) {
    throw new ProtocolError("non_finite_tensor", `Cannot use ${what}: element ${i} is ${data[i]}`);
  }
}

/** True when every value of `data[lo, hi)` is finite (not NaN, not ±Infinity): `assertFinite` without the throw. */
export function allFinite(data: Float32Array, lo = 0, hi: number = data.length): boolean {
  return firstNonFinite(data, lo, hi) < 0;
}

/** The index of the first NaN or infinite value of `data[lo, hi)`, or −1 when every one is finite. */
function firstNonFinite(data: Float32Array, lo = 0, hi: number = data.length): number {
  for (let i = lo; i < hi; i++) {
    const v = data[i]!;
    if (v - v !== 0) return i;
  }
  return -1;
}

/** True when two tensors have the same shape and the same bits (so +0 differs from -0, and NaN payloads count). */
export function bitEqual(a: Tensor, b: Tensor): boolean {
  if (!sameShape(a.shape, b.shape)) return false;
  const x = new Uint32Array(a.data.buffer, a.data.byteOffset, a.data.length);
  const y = new Uint32Array(b.data.buffer, b.data.byteOffset, b.data.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
