/**
 * Large float32 copies split by element ranges across the task pool (`task_pool.ts`), each range optionally
 * checked for non-finite values as it is copied: how the kernels move a matmul's inputs into their memory and
 * its output out of it (into, e.g., the gradient file it is committed in) on every thread. A copy changes no
 * bit, and the check is a plain and of independent per-range flags, so the result is the same for any thread
 * count. A range leaves the calling thread only when both arrays are on a `SharedArrayBuffer` (the kernels'
 * WebAssembly memory is one); otherwise, or below `COPY_SPLIT_MIN` elements, it is one `set` here.
 *
 * @example
 * ```ts
 * import { copyFloats } from "./parallel_copy.ts";
 * const src = new Float32Array([1, 2, NaN]), dst = new Float32Array(3);
 * copyFloats(src, dst, true); // false: dst holds 1, 2, NaN
 * ```
 * @module
 */

import { kernelThreads } from "./threads.ts";
import type { CopyTask } from "./task_ops.ts";
import { isShared, runTasks, taskPoolDisabled } from "./task_pool.ts";
import { allFinite } from "./tensor.ts";
import { kernelMemory } from "./wasm/kernel_memory.ts";

/**
 * Below this many elements (4 MiB) a copy stays one `set` on the calling thread. Handing out tasks costs a
 * message to a task worker and, after it, waking the kernel workers that rest while task workers run
 * (`restKernelWorkers`), more than half of a copy of a few MB saves: a SmolLM2 training step on two threads,
 * whose weight gradients (up to 3.5 MB each) are copied into their files, took 2.90-3.03 s a step with
 * copies split from 2^16 elements against 2.82-2.87 from 2^20 and 2.75-2.84 from 2^22 (interleaved in one
 * process, December 2026); 2^20 keeps the larger copies (the embedding's gradient, 113 MB) on every thread.
 */
export const COPY_SPLIT_MIN = 1 << 20;
/** About how many elements one copy task moves: a few per thread, so a late thread takes fewer. */
export const COPY_TASK_ELEMENTS = 1 << 18;
const MAX_COPY_TASKS = 64;

/**
 * Copies `src` into the first `src.length` elements of `dst` (which must not overlap it) on up to `threads`
 * threads; with `check`, returns false when any copied value is NaN or infinite (true otherwise; always true
 * without `check`).
 */
export function copyFloats(
  src: Float32Array,
  dst: Float32Array,
  check: boolean,
  threads: number = kernelThreads(),
): boolean {
  const n = src.length;
  if (dst.length < n) {
    throw new RangeError(
      `Cannot copy floats: destination has ${dst.length} elements, expected at least ${n}`,
    );
  }
  if (
    threads <= 1 || n < COPY_SPLIT_MIN || !isShared(src) || !isShared(dst) ||
    taskPoolDisabled() !== null
  ) {
    dst.set(src);
    return !check || copiedFinite(src, dst, n);
  }
  const parts = Math.max(2, Math.min(MAX_COPY_TASKS, Math.ceil(n / COPY_TASK_ELEMENTS)));
  const tasks: CopyTask[] = [];
  for (let p = 0; p < parts; p++) {
    const lo = Math.floor((n * p) / parts), hi = Math.floor((n * (p + 1)) / parts);
    tasks.push({ op: "copy", src, dst, lo, hi, check });
  }
  return runTasks(tasks, threads).every((r) => r[0] === 1);
}

/**
 * `allFinite` of the n values just copied: one SIMD pass (`all_finite` in `matmul.wat`) when either array is
 * in the kernels' memory (a matmul's output copied out, an input copied in), else the plain loop.
 */
function copiedFinite(src: Float32Array, dst: Float32Array, n: number): boolean {
  const km = kernelMemory();
  if (km !== null) {
    const buf = km.memory.buffer;
    if (dst.buffer === buf) return km.matmul.all_finite(dst.byteOffset, n) === 1;
    if (src.buffer === buf) return km.matmul.all_finite(src.byteOffset, n) === 1;
  }
  return allFinite(dst, 0, n);
}
