/**
 * The drafter's int8 matrix-vector product (`draft.wat`): NON-CONSENSUS, fast and approximate. A matrix is
 * quantised once into the kernels' resident memory in blocks of 32 along each row (an int8 per weight, one
 * float32 scale per block: Q8_0), and each product quantises its input vector the same way, so a row costs
 * integer dot products and one float multiply-add per block. Rows are split across the kernel threads.
 * Nothing here is ever committed: the deterministic kernels verify every token it helps to draft.
 * @module
 */

import { kernelThreads } from "../threads.ts";
import { allocResident, ensureBytes, kernelMemory, Q8_MATVEC4_KERNEL, scratchBase } from "./kernel_memory.ts";

/** A [rows, cols] matrix quantised to int8 in blocks of 32 columns, resident in the kernels' memory. */
export interface Q8Matrix {
  readonly rows: number;
  readonly cols: number;
  readonly weights: number; // byte offset of int8 [rows][cols]
  readonly scales: number; // byte offset of float32 [rows][cols / 32]
}

/** Below this many weights (rows · cols) a product stays on one thread (handing out work costs microseconds). */
const Q8_THREAD_MIN_WORK = 1 << 19;

/**
 * Quantises the 32 values of `src` from `at` into `q` from `qAt` (round(value · 127 / max |value|)) and
 * returns the block's scale (max |value| / 127; stored as float32, the dequantised values are scale · q).
 * `q8Matvec` quantises its input vector this way, so the exact head argmax (`head_argmax.ts`) can bound it.
 */
export function quantiseBlock(src: Float32Array, at: number, q: Int8Array | Int16Array, qAt: number): number {
  let amax = 0;
  for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(src[at + i]!));
  const scale = amax / 127, inv = amax === 0 ? 0 : 127 / amax;
  for (let i = 0; i < 32; i++) q[qAt + i] = Math.round(src[at + i]! * inv);
  return scale;
}

/** True when the int8 kernels can run here (WebAssembly SIMD with shared memory). */
export function q8Available(): boolean {
  return kernelMemory() !== null;
}

/** Quantises `data` ([rows, cols] row-major, cols a multiple of 32) into the resident memory. */
export function quantiseQ8(data: Float32Array, rows: number, cols: number): Q8Matrix {
  const km = kernelMemory();
  if (km === null) {
    throw new Error("Cannot quantise for the drafter: the WebAssembly kernels are unavailable");
  }
  if (cols % 32 !== 0 || data.length < rows * cols) {
    throw new Error(
      `Cannot quantise for the drafter: ${rows}x${cols} from ${data.length} values, cols % 32 = 0`,
    );
  }
  const blocks = cols / 32;
  const weights = allocResident(km, rows * cols), scales = allocResident(km, 4 * rows * blocks);
  const q = new Int8Array(km.memory.buffer, weights, rows * cols);
  const s = new Float32Array(km.memory.buffer, scales, rows * blocks);
  for (let r = 0; r < rows; r++) {
    for (let b = 0; b < blocks; b++) {
      s[r * blocks + b] = quantiseBlock(data, r * cols + b * 32, q, r * cols + b * 32);
    }
  }
  return { rows, cols, weights, scales };
}

/** y[0..rows) ≈ m · x (x has m.cols values); approximate, on up to `threads` threads. */
export function q8Matvec(m: Q8Matrix, x: Float32Array, y: Float32Array, threads = kernelThreads()): void {
  const { y: at } = q8MatvecInMemory(m, x, threads);
  y.set(new Float32Array(kernelMemory()!.memory.buffer, at, m.rows));
}

/**
 * `q8Matvec` leaving y in the kernels' scratch: where y [rows] is, and x as the kernel quantised it (`q`, in
 * blocks of 32 with the float32 `scales`: views of the scratch, valid until the next kernel call). `end` is
 * the first byte after them, where a caller may put more scratch.
 */
export function q8MatvecInMemory(
  m: Q8Matrix,
  x: Float32Array,
  threads = kernelThreads(),
): { y: number; q: Int16Array; scales: Float32Array; end: number } {
  const km = kernelMemory();
  if (km === null) throw new Error("Cannot run the drafter: the WebAssembly kernels are unavailable");
  const K = m.cols, blocks = K / 32;
  const xq = scratchBase(), xs = xq + 2 * K, yAt = xs + 4 * blocks + 64, end = yAt + 4 * m.rows + 64;
  ensureBytes(km, end);
  const buf = km.memory.buffer;
  const q = new Int16Array(buf, xq, K), s = new Float32Array(buf, xs, blocks);
  for (let b = 0; b < blocks; b++) s[b] = quantiseBlock(x, b * 32, q, b * 32);
  const parts = m.rows * K < Q8_THREAD_MIN_WORK ? 1 : Math.max(1, Math.min(threads, Math.floor(m.rows / 16)));
  const jobs: number[][] = [];
  for (let p = 0; p < parts; p++) {
    const lo = Math.floor((m.rows * p) / parts), hi = Math.floor((m.rows * (p + 1)) / parts);
    jobs.push([Q8_MATVEC4_KERNEL, m.weights, m.scales, xq, xs, yAt, K, lo, hi]);
  }
  // four rows at a time share each block's activations: the same values as q8_matvec, row by row
  const run = (job: readonly number[]) => km.draft.q8_matvec4(...job.slice(1));
  if (jobs.length === 1) run(jobs[0]!);
  else km.pool.run(jobs, run);
  return { y: yAt, q, scales: s, end: Math.ceil(end / 64) * 64 };
}
