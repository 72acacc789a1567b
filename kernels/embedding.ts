/**
 * Token embedding (tied with the output head): forward looks rows up, backward scatters gradients back.
 *
 * @example
 * ```ts
 * import { embeddingForward } from "./embedding.ts";
 * const w = new Float32Array([0, 1, 2, 3]); // w: [V=2, C=2]
 * embeddingForward(w, new Int32Array([1, 0]), 2, 2); // [2, 3, 0, 1]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";

/** Throws `invalid_tensor` unless every id is an integer in [0, V). */
export function checkIds(ids: Int32Array, V: number, what = "token ids"): void {
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t]!;
    if (id < 0 || id >= V) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot embed ${what}: id ${id} at ${t} is outside [0, ${V})`,
      );
    }
  }
}

/** y[t] = weight[ids[t]]: weight [V,C], ids [N] → y [N,C]. */
export function embeddingForward(weight: Float32Array, ids: Int32Array, V: number, C: number): Float32Array {
  checkIds(ids, V);
  const y = new Float32Array(ids.length * C); // y: [N,C]
  for (let t = 0; t < ids.length; t++) y.set(weight.subarray(ids[t]! * C, ids[t]! * C + C), t * C);
  return y;
}

/**
 * dWeight[v] = Σ dy[t] over positions t with ids[t] = v, t ascending, each sum starting at +0 and rounded to
 * float32 after every addition: dy [N,C] → dWeight [V,C].
 */
export function embeddingBackward(dy: Float32Array, ids: Int32Array, V: number, C: number): Float32Array {
  const dw = new Float32Array(V * C); // dw: [V,C]
  for (const [id, row] of embeddingBackwardRows(dy, ids, V, C)) dw.set(row, id * C);
  return dw;
}

/**
 * The rows of `embeddingBackward` that can be non-zero (one per distinct id, in order of first use), the same
 * bits without the [V,C] array; every other row of the dense gradient is +0.
 */
export function embeddingBackwardRows(
  dy: Float32Array,
  ids: Int32Array,
  V: number,
  C: number,
): Map<number, Float32Array> {
  checkIds(ids, V);
  const rows = new Map<number, Float32Array>();
  for (let t = 0; t < ids.length; t++) {
    let row = rows.get(ids[t]!);
    if (row === undefined) rows.set(ids[t]!, row = new Float32Array(C)); // starts at +0
    for (let c = 0; c < C; c++) row[c] = Math.fround(row[c]! + dy[t * C + c]!);
  }
  return rows;
}
