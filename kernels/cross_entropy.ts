/**
 * Masked mean cross-entropy over logits, the per-row losses, and its gradient.
 *
 * Labels equal to −100 are ignored; every other label must be in [0, V), and at least one must be present.
 * Per labelled row n (float32, sums ascending from +0): `m = max_j z_j`, `e_j = expf(z_j − m)`,
 * `Z = Σ_j e_j`, `loss_n = fround(logf(Z) − fround(z_y − m))`; ignored rows have loss +0 and gradient +0.
 * The mean loss is float64: `Σ loss_n` (rows ascending, float64) divided by the number of labelled rows
 * `L`. Gradient: `dz_j = fround(fround(fround(e_j / Z) − [j = y]) / L)`.
 *
 * The `…Reference` functions are these loops. `crossEntropyForward` and `crossEntropyForwardBackward` run the
 * exponentials and the gradient on the WebAssembly softmax kernels (`kernels/wasm/softmax.wat`) when
 * available and `NEURO_KERNELS` is not "reference", split by vocabulary ranges across the kernel threads;
 * each row's maximum and its sum `Z` (in ascending vocabulary order) are taken on the calling thread, so the
 * bits are the reference's for any thread count.
 *
 * @example
 * ```ts
 * import { crossEntropyForward } from "./cross_entropy.ts";
 * const r = crossEntropyForward(new Float32Array([0, 0]), new Int32Array([1]), 1, 2); // r.loss = log 2
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { expf, logf } from "./math.ts";
import { FORCE_REFERENCE } from "./matmul.ts";
import { type VocabRows, wasmVocabRows } from "./wasm/softmax_wasm.ts";
import { assertFinite } from "./tensor.ts";

const fr = Math.fround;

/** The label of a position that has no target. */
export const IGNORE_INDEX = -100;

/** The loss of a batch: the float64 mean, each row's float32 loss, and how many rows were labelled. */
export interface CrossEntropyResult {
  readonly loss: number;
  readonly rowLosses: Float32Array; // rowLosses: [N]
  readonly labelled: number;
}

function checkLabels(labels: Int32Array, V: number): number {
  let labelled = 0;
  for (let n = 0; n < labels.length; n++) {
    const y = labels[n]!;
    if (y === IGNORE_INDEX) continue;
    if (y < 0 || y >= V) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot compute loss: label ${y} at ${n} is outside [0, ${V})`,
      );
    }
    labelled++;
  }
  if (labelled === 0) throw new ProtocolError("invalid_tensor", "Cannot compute loss: every label is -100");
  return labelled;
}

/** Fills e (one row's exponentials) and returns Z; m is the row's maximum. */
function rowExp(z: Float32Array, o: number, V: number, e: Float32Array): { m: number; sum: number } {
  let m = z[o]!;
  for (let j = 1; j < V; j++) if (z[o + j]! > m) m = z[o + j]!;
  let sum = 0;
  for (let j = 0; j < V; j++) {
    e[j] = expf(fr(z[o + j]! - m));
    sum = fr(sum + e[j]!);
  }
  return { m, sum };
}

/** One labelled row's loss from its max `m` and exponential sum: log(sum) − (z[y] − m), in float32. */
function rowLoss(logits: Float32Array, o: number, y: number, m: number, sum: number): number {
  return fr(logf(sum) - fr(logits[o + y]! - m));
}

/** One labelled row's logit gradient into dz[o…o+V): (softmax − onehot(y)) / labelled, in float32. */
function rowGradient(
  e: Float32Array,
  sum: number,
  y: number,
  labelled: number,
  dz: Float32Array,
  o: number,
): void {
  for (let j = 0; j < e.length; j++) dz[o + j] = fr(fr(fr(e[j]! / sum) - (j === y ? 1 : 0)) / labelled);
}

/** Below this many logits (N·V) the reference loops run (copying into the kernels costs more). */
export const VOCAB_WASM_MIN = 4096;

/** The rows' maxima, sums and (when asked) gradient from the kernels, or null to use the reference loops. */
function fastRows(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
  labelled: number,
  gradient: boolean,
): VocabRows | null {
  if (FORCE_REFERENCE || N * V < VOCAB_WASM_MIN || logits.length < N * V || labels.length < N) return null;
  try {
    return wasmVocabRows(logits, labels, N, V, labelled, gradient);
  } catch (e) {
    if (e instanceof RangeError) return null; // the memory could not grow: the same bits from the loops
    throw e;
  }
}

/** The mean loss and per-row losses from each labelled row's maximum and exponential sum. */
function lossesOf(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
  labelled: number,
  rows: VocabRows,
) {
  const rowLosses = new Float32Array(N); // rowLosses: [N]
  let total = 0;
  for (let n = 0; n < N; n++) {
    const y = labels[n]!;
    if (y === IGNORE_INDEX) continue;
    rowLosses[n] = rowLoss(logits, n * V, y, rows.m[n]!, rows.sums[n]!);
    total += rowLosses[n]!;
  }
  assertFinite(rowLosses, "row losses");
  return { loss: total / labelled, rowLosses, labelled };
}

/** logits [N,V], labels [N] → mean loss and per-row losses (fastest path with the reference's bits). */
export function crossEntropyForward(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
): CrossEntropyResult {
  const labelled = checkLabels(labels, V);
  const rows = fastRows(logits, labels, N, V, labelled, false);
  if (rows === null) return crossEntropyForwardReference(logits, labels, N, V);
  return lossesOf(logits, labels, N, V, labelled, rows);
}

/** `crossEntropyForward` by the reference loops. */
export function crossEntropyForwardReference(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
): CrossEntropyResult {
  const labelled = checkLabels(labels, V);
  const rowLosses = new Float32Array(N); // rowLosses: [N]
  const e = new Float32Array(V); // e: [V]
  let total = 0;
  for (let n = 0; n < N; n++) {
    const y = labels[n]!;
    if (y === IGNORE_INDEX) continue;
    const o = n * V;
    const { m, sum } = rowExp(logits, o, V, e);
    rowLosses[n] = rowLoss(logits, o, y, m, sum);
    total += rowLosses[n]!;
  }
  assertFinite(rowLosses, "row losses");
  return { loss: total / labelled, rowLosses, labelled };
}

/** The gradient of the mean loss with respect to the logits: [N,V] (the forward pass's exponentials reused). */
export function crossEntropyBackward(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
): Float32Array {
  return crossEntropyForwardBackward(logits, labels, N, V).dz;
}

/**
 * The mean loss, the per-row losses and the gradient in one pass (each row's exponentials computed once);
 * the same bits as `crossEntropyForward` and `crossEntropyBackward`, on the fastest path with those bits.
 */
export function crossEntropyForwardBackward(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
): CrossEntropyResult & { readonly dz: Float32Array } {
  const labelled = checkLabels(labels, V);
  const rows = fastRows(logits, labels, N, V, labelled, true);
  if (rows === null) return crossEntropyForwardBackwardReference(logits, labels, N, V);
  const r = lossesOf(logits, labels, N, V, labelled, rows);
  assertFinite(rows.dz!, "logit gradient");
  return { ...r, dz: rows.dz! };
}

/** `crossEntropyForwardBackward` by the reference loops. */
export function crossEntropyForwardBackwardReference(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
): CrossEntropyResult & { readonly dz: Float32Array } {
  const labelled = checkLabels(labels, V);
  const rowLosses = new Float32Array(N); // rowLosses: [N]
  const dz = new Float32Array(N * V); // dz: [N,V]
  const e = new Float32Array(V); // e: [V]
  let total = 0;
  for (let n = 0; n < N; n++) {
    const y = labels[n]!;
    if (y === IGNORE_INDEX) continue;
    const o = n * V;
    const { m, sum } = rowExp(logits, o, V, e);
    rowLosses[n] = rowLoss(logits, o, y, m, sum);
    total += rowLosses[n]!;
    rowGradient(e, sum, y, labelled, dz, o);
  }
  assertFinite(rowLosses, "row losses");
  assertFinite(dz, "logit gradient");
  return { loss: total / labelled, rowLosses, labelled, dz };
}

/** Index of each row's largest value (the lowest index among equals): x [N,V] → [N]. */
export function argmax(x: Float32Array, N: number, V: number): Int32Array {
  assertFinite(x.subarray(0, N * V), "argmax input");
  const out = new Int32Array(N); // out: [N]
  for (let n = 0; n < N; n++) {
    let best = 0;
    for (let j = 1; j < V; j++) if (x[n * V + j]! > x[n * V + best]!) best = j;
    out[n] = best;
  }
  return out;
}
