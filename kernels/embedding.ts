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
import type { PlusZeroTask } from "./task_ops.ts";
import { runTasks } from "./task_pool.ts";
import { allFinite, assertFinite } from "./tensor.ts";

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

/** Elements per task of `embeddingGradient`'s +0 pass: a few tasks per thread for a real vocabulary. */
export const EMBED_TASK_ELEMENTS = 1 << 20;

/**
 * The tied embedding's gradient on stage 0, written into `out` [V,C] (which may be `fromHead` itself):
 * `fround(head part + lookup part)` element by element, the lookup's part given by its non-zero `rows`
 * (`embeddingBackwardRows`; every other row is +0). Throws `non_finite_tensor` ("embedding gradient") at the
 * first non-finite element.
 *
 * Every element first becomes `fround(head + 0)`, by element ranges on the task pool (each element stands
 * alone), and then each used row adds its lookup row here. Those are the bits of the one sum: adding +0
 * changes only −0 (to +0), and −0 + r = +0 + r for every r but −0, which a lookup row (a sum from +0)
 * never holds.
 */
export function embeddingGradient(
  fromHead: Float32Array,
  rows: ReadonlyMap<number, Float32Array>,
  V: number,
  C: number,
  out: Float32Array,
): Float32Array {
  const n = V * C, tasks: PlusZeroTask[] = [];
  for (let lo = 0; lo < n; lo += EMBED_TASK_ELEMENTS) {
    tasks.push({ op: "plus_zero", src: fromHead, dst: out, lo, hi: Math.min(n, lo + EMBED_TASK_ELEMENTS) });
  }
  let finite = runTasks(tasks).every((r) => r[0] === 1);
  for (const [id, row] of rows) {
    for (let j = 0; j < C; j++) out[id * C + j] = Math.fround(out[id * C + j]! + row[j]!);
    finite &&= allFinite(out, id * C, id * C + C);
  }
  if (!finite) assertFinite(out, "embedding gradient"); // throws at the first
  return out;
}
