/**
 * The greedy token of each row, exactly `argmax(headLogits(hidden, norm, embed, c, N), N, V)` (the same ids
 * and the same errors), without computing most of the head's logits.
 *
 * The head is the largest matmul of a decoded token (SmolLM2: 49,152 × 576 weights, a sixth of a token's
 * time), yet greedy decoding wants only the index of its largest logit. An int8 copy of the embedding
 * (Q8_0: blocks of 32, one float32 scale each, `wasm/draft_wasm.ts`) gives every logit approximately, at a
 * quarter of the bytes read, and a proven bound on each approximation's error leaves only a handful of rows
 * (8 to 20 of 49,152 on SmolLM2's answers) that could be the largest; their logits are then computed exactly,
 * in the matmul's own order, and the first largest wins, as in `argmax`.
 *
 * THE BOUND. y is the normalised row (`rmsnormOutput`, the bits the head multiplies), W_v row v of the
 * embedding, z_v the logit the matmul computes (`matmul.ts`: acc = +0, acc = fl(acc + fl(y_k · W_vk)) for
 * k ascending), d_v = y·W_v exactly. ŷ and Ŵ_v are the dequantised copies (a block's float32 scale times its
 * integers), E_v = W_v − Ŵ_v, and s̃_v the int8 kernel's result: exact integer dot products per block of 32,
 * each times fl(scale_w · scale_x), summed in float32 in 4 lanes of nb = C/32 terms and then across lanes.
 * With u = 2⁻²⁴ and γ_n = nu/(1 − nu) (the standard bound of n roundings):
 *
 *   |z_v − d_v| ≤ γ_C ‖y‖ ‖W_v‖                      (recursive summation of C products; Cauchy–Schwarz)
 *   |d_v − ŷ·Ŵ_v| ≤ ‖y − ŷ‖ ‖Ŵ_v‖ + ‖y‖ ‖E_v‖         (d_v − ŷ·Ŵ_v = (y − ŷ)·Ŵ_v + y·E_v)
 *   |ŷ·Ŵ_v − s̃_v| ≤ γ_{nb+4} ‖ŷ‖ ‖Ŵ_v‖                (each term passes at most nb + 3 roundings)
 *
 * so |z_v − s̃_v| ≤ B_v, their sum plus ETA = 2⁻¹⁰⁰ (every subnormal result's absolute error, 2⁻¹⁵⁰ per
 * rounding, together far below it). The norms are computed in float64 and rounded up by MARGIN = 1 + 2⁻³⁰
 * (float64's own error over these sums is below C · 2⁻⁵³), and s̃_v ± B_v are widened by 2⁻⁵⁰ of their
 * magnitude to cover the roundings of computing them. Then with L = max_u (s̃_u − B_u) ≤ max_u z_u, every
 * v whose z_v is the largest has s̃_v + B_v ≥ z_v ≥ L, so the candidates {v : s̃_v + B_v ≥ L} hold every
 * maximum, and the first maximum among them is `argmax`'s.
 *
 * The whole head decides instead (same bits, slower) when the bound does not apply or could not be kept:
 * C is not a multiple of 32, the int8 kernels are unavailable, `NEURO_KERNELS=reference`, the embedding is
 * not resident (`makeResident`: the copy is kept for the tensor's life, so only tensors that are never
 * written again get one), a weight is not finite, a row's ‖y‖·max‖W_v‖ could overflow (then the matmul's
 * own error must be raised), or the copies would pass `HEAD_COPY_MAX_BYTES` (or memory ran out building one).
 *
 * @example
 * ```ts
 * import { headTokens } from "./head_argmax.ts";
 * // const ids = headTokens(hidden, model.components.norm!, model.components.embed!, model.config, N);
 * // ids equals argmax(headLogits(hidden, ...), N, V), bit for bit
 * ```
 * @module
 */

import type { ModelConfig } from "./config.ts";
import { argmax } from "./cross_entropy.ts";
import { linearForward } from "./linear.ts";
import { FORCE_REFERENCE } from "./matmul.ts";
import { EMBED_TENSOR, NORM_TENSOR } from "./model.ts";
import { rmsnormOutput } from "./rmsnorm.ts";
import type { Tensors } from "./safetensors.ts";
import {
  allocResident,
  ensureBytes,
  HEAD_BOUNDS_KERNEL,
  isResident,
  kernelMemory,
} from "./wasm/kernel_memory.ts";
import { q8Available, type Q8Matrix, q8MatvecInMemory, quantiseQ8 } from "./wasm/draft_wasm.ts";
import { kernelThreads, MAX_THREADS } from "./threads.ts";
import { unitSplit } from "./wasm/softmax_wasm.ts";

/** Float64 sums of C squares are within C · 2⁻⁵³ of exact; every norm is rounded up by this factor. */
const MARGIN = 1 + 2 ** -30;
/** Covers the absolute errors of subnormal results (at most 2⁻¹⁵⁰ per rounding). */
const ETA = 2 ** -100;
/** Relative widening of s̃ ± B for the float64 roundings of computing them (at most 3 · 2⁻⁵³). */
const WIDEN = 2 ** -50;
/** A row whose ‖y‖·max‖W_v‖ reaches this could overflow float32 (2¹²⁸): the whole head decides it. */
const OVERFLOW = 2 ** 126;

/** γ_n = nu/(1 − nu), u = 2⁻²⁴: the relative error bound of n float32 roundings in a row. */
function gamma(n: number): number {
  const nu = n * 2 ** -24;
  return (nu / (1 - nu)) * MARGIN;
}

/** The most bytes of int8 copies (and their norms) this process keeps (they are never given back). */
export const HEAD_COPY_MAX_BYTES = 256 * 2 ** 20;

/** Rows decided, candidates computed exactly over them, and rows the whole head decided. */
export const HEAD_ARGMAX_STATS = { rows: 0, candidates: 0, whole: 0 };

/**
 * An embedding's int8 copy and the norms of its rows (each rounded up by MARGIN), all in the kernels'
 * resident memory, where the bounds kernel reads them.
 */
interface HeadCopy {
  readonly q8: Q8Matrix;
  readonly hatNorm: Float64Array; // ‖Ŵ_v‖
  readonly errNorm: Float64Array; // ‖E_v‖ + γ_C ‖W_v‖
  readonly maxNorm: number; // max ‖W_v‖
}

/** By resident embedding: its copy, or null when it cannot have one (a weight not finite, no room). */
const COPIES = new WeakMap<Float32Array, HeadCopy | null>();
let copyBytes = 0;

function headCopy(w: Float32Array, V: number, C: number): HeadCopy | null {
  const known = COPIES.get(w);
  if (known !== undefined) return known;
  const copy = buildCopy(w, V, C);
  COPIES.set(w, copy);
  return copy;
}

function buildCopy(w: Float32Array, V: number, C: number): HeadCopy | null {
  const km = kernelMemory();
  const bytes = V * C + (V * C) / 8 + 16 * V;
  if (km === null || copyBytes + bytes > HEAD_COPY_MAX_BYTES) return null;
  for (let i = 0; i < V * C; i++) if (!Number.isFinite(w[i]!)) return null;
  let q8: Q8Matrix;
  try {
    q8 = quantiseQ8(w, V, C);
  } catch (e) {
    if (e instanceof RangeError) return null; // the kernels' memory could not grow: the whole head decides
    throw e;
  }
  copyBytes += bytes;
  const nb = C / 32, gC = gamma(C);
  const q = new Int8Array(km.memory.buffer, q8.weights, V * C);
  const s = new Float32Array(km.memory.buffer, q8.scales, V * nb);
  let hatAt: number, errAt: number;
  try {
    hatAt = allocResident(km, 8 * V);
    errAt = allocResident(km, 8 * V);
  } catch (e) {
    if (e instanceof RangeError) return null; // no room: the whole head decides
    throw e;
  }
  const hatNorm = new Float64Array(km.memory.buffer, hatAt, V),
    errNorm = new Float64Array(km.memory.buffer, errAt, V);
  let maxNorm = 0;
  for (let v = 0; v < V; v++) {
    let ww = 0, hh = 0, ee = 0;
    for (let b = 0; b < nb; b++) {
      const scale = s[v * nb + b]!;
      for (let i = v * C + b * 32, end = i + 32; i < end; i++) {
        const x = w[i]!, h = scale * q[i]!; // h: exact in float64 (24 × 8 bits)
        ww += x * x;
        hh += h * h;
        ee += (x - h) * (x - h);
      }
    }
    const nW = Math.sqrt(ww) * MARGIN;
    hatNorm[v] = Math.sqrt(hh) * MARGIN;
    errNorm[v] = (Math.sqrt(ee) * MARGIN + gC * nW) * MARGIN;
    maxNorm = Math.max(maxNorm, nW);
  }
  return { q8, hatNorm, errNorm, maxNorm };
}

/**
 * The int8 (Q8_0) copy of a resident embedding [V, C] that `headTokens` reads, built now if it is not yet
 * (`quantiseQ8`'s blocks: what the Q8 drafter would quantise for its own head), so that the drafter shares
 * it instead of keeping a second copy (~31 MB for SmolLM2). Null where `headTokens` keeps no copy (the
 * embedding not resident, a width not a multiple of 32, no kernels, `NEURO_KERNELS=reference`, a weight
 * not finite, no room): the caller then quantises its own.
 */
export function sharedHeadQ8(w: Float32Array, V: number, C: number): Q8Matrix | null {
  return usableCopy(w, V, C)?.q8 ?? null;
}

/**
 * The copy `headTokens` reads for embedding `w`, or null where it keeps none (a width not a multiple of
 * 32, `NEURO_KERNELS=reference`, no kernels, an embedding not resident, or `headCopy` refused).
 */
function usableCopy(w: Float32Array, V: number, C: number): HeadCopy | null {
  return C % 32 === 0 && !FORCE_REFERENCE && q8Available() && isResident(w) ? headCopy(w, V, C) : null;
}

/** Below this many rows the bounds run on the calling thread alone. */
const BOUNDS_SPLIT_MIN = 1 << 14;

/**
 * hidden [N, C] → the greedy id of each row: exactly `argmax(headLogits(hidden, norm, embed, c, N), N, V)`,
 * with the same error when that throws. See the module documentation.
 */
export function headTokens(
  hidden: Float32Array,
  norm: Tensors,
  embed: Tensors,
  c: ModelConfig,
  N: number,
): Int32Array {
  const C = c.hidden_size, V = c.vocab_size, w = embed[EMBED_TENSOR]!.data;
  const y = rmsnormOutput(hidden, norm[NORM_TENSOR]!.data, N, C, c.rms_norm_eps); // y: [N,C], as the head's
  const copy = usableCopy(w, V, C);
  const whole = () => {
    HEAD_ARGMAX_STATS.whole += N;
    return argmax(linearForward(y, w, N, C, V), N, V); // the head's own bits and errors
  };
  if (copy === null) return whole();
  const yNorms = new Float64Array(N);
  for (let n = 0; n < N; n++) {
    let yy = 0;
    for (let i = n * C; i < (n + 1) * C; i++) yy += y[i]! * y[i]!;
    yNorms[n] = Math.sqrt(yy) * MARGIN;
    // a row that could overflow: the matmul raises the error (for the whole call, as the reference does)
    if (!(yNorms[n]! * copy.maxNorm * (1 + gamma(C)) < OVERFLOW)) return whole();
  }
  const out = new Int32Array(N);
  const g = gamma(C / 32 + 4), threads = kernelThreads(), km = kernelMemory()!;
  for (let n = 0; n < N; n++) {
    const row = y.subarray(n * C, (n + 1) * C);
    // the int8 logits s̃ stay in the kernels' scratch; x as the kernel quantised it gives ŷ
    const { y: approx, q: qx, scales, end } = q8MatvecInMemory(copy.q8, row, threads);
    let hh = 0, dd = 0; // ‖ŷ‖², ‖y − ŷ‖²
    for (let b = 0; b < C / 32; b++) {
      const scale = scales[b]!;
      for (let i = b * 32; i < b * 32 + 32; i++) {
        const h = scale * qx[i]!;
        hh += h * h;
        dd += (row[i]! - h) * (row[i]! - h);
      }
    }
    const alpha = (Math.sqrt(dd) * MARGIN + g * Math.sqrt(hh) * MARGIN) * MARGIN, beta = yNorms[n]!;
    // hi_v = s̃_v + B_v + slack and L = max (s̃_v − B_v − slack), by rows split over the threads; the
    // parameter block, then each part's L (at most MAX_THREADS), hi [V] and the candidates [V]
    const ranges = unitSplit(V, V, threads, BOUNDS_SPLIT_MIN), params = end, lows = params + 64;
    const hiAt = lows + 8 * MAX_THREADS, idsAt = hiAt + 8 * V;
    ensureBytes(km, idsAt + 4 * V);
    const buf = km.memory.buffer;
    new Float64Array(buf, params, 5).set([alpha, beta, MARGIN, ETA, WIDEN]);
    new Int32Array(buf, params + 40, 4).set([approx, copy.hatNorm.byteOffset, copy.errNorm.byteOffset, hiAt]);
    const jobs = ranges.map(([lo, hi], part) => [HEAD_BOUNDS_KERNEL, params, part, lo, hi]);
    const bounds = (job: readonly number[]) => km.draft.head_bounds(job[1]!, job[2]!, job[3]!, job[4]!);
    if (jobs.length === 1) bounds(jobs[0]!);
    else km.pool.run(jobs, bounds, threads);
    const low = Math.max(...new Float64Array(buf, lows, jobs.length));
    if (Number.isNaN(low)) return whole(); // an s̃ not finite: cannot happen below OVERFLOW; never trust it
    const count = km.draft.head_candidates(hiAt, V, low, idsAt);
    const ids = new Int32Array(buf, idsAt, count);
    let best = -1, bestZ = -Infinity;
    for (const v of ids) { // ascending
      let z = 0; // the matmul's definition, in its order
      for (let k = 0, at = v * C; k < C; k++) z = Math.fround(z + Math.fround(row[k]! * w[at + k]!));
      if (z > bestZ) { // strictly larger: among equals the lowest index stays, as in `argmax`
        bestZ = z;
        best = v;
      }
    }
    out[n] = best;
    HEAD_ARGMAX_STATS.rows++;
    HEAD_ARGMAX_STATS.candidates += count;
  }
  return out;
}
