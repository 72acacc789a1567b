/**
 * The operations the task pool (`task_pool.ts`) runs on any thread: the training step's work outside the
 * matmuls — hashing whole files, SGD over element ranges, the running squared-gradient sums of a stage, the
 * embedding gradient's +0 over element ranges. Each
 * is a plain loop or one sequential digest over its own inputs, written once here and run by the calling
 * thread or a task worker alike, so which thread runs a task never changes a bit: a task is never split
 * inside one sum or one digest, only different tasks run side by side.
 *
 * A task's result is a few bytes it writes into the run's result buffer (`resultBytes` says how many).
 * This module imports nothing heavy, so a task worker starts quickly.
 *
 * @example
 * ```ts
 * import { resultBytes, runTask, type Task } from "./task_ops.ts";
 * const task: Task = { op: "sha256", parts: [new Uint8Array([1, 2, 3])] };
 * const out = new Uint8Array(resultBytes(task));
 * runTask(task, out); // out: the 32-byte SHA-256 of 01 02 03
 * ```
 * @module
 */

import { createHash } from "node:crypto";
import { chunkRootBytesOfParts } from "../core/chunk_tree.ts";
import { allFinite } from "./tensor.ts";

/** SHA-256 of the concatenation of `parts` (a file, possibly in pieces): 32 bytes. */
export interface Sha256Task {
  readonly op: "sha256";
  readonly parts: readonly Uint8Array[];
}

/** The chunk root (`core/chunk_tree.ts`) of the concatenation of `parts`: 32 bytes. */
export interface ChunkRootTask {
  readonly op: "chunk_root";
  readonly parts: readonly Uint8Array[];
}

/**
 * SGD on elements [lo, hi): `out[i] = fround(w[i] − fround(eta·g[i]))` (`out` may be `g`); 1 byte, 1 when
 * every new value is finite.
 */
export interface SgdTask {
  readonly op: "sgd";
  readonly w: Float32Array;
  readonly g: Float32Array;
  readonly out: Float32Array;
  readonly eta: number;
  readonly lo: number;
  readonly hi: number;
}

/**
 * Running float64 sums of squares: from +0, each group's arrays in order, elements ascending, `total += x·x`;
 * the total after each group, as one float64 per group (`normSquaredFrom`'s additions, in its order).
 */
export interface SumSquaresTask {
  readonly op: "sum_squares";
  readonly groups: readonly (readonly Float32Array[])[];
}

/**
 * A copy of elements [lo, hi) of `src` into the same places of `dst` (e.g. a matmul's output out of the
 * kernels' memory into the file it is committed in), with `check`: 1 byte, 1 when every copied value is
 * finite (without `check` always 1), so the copy also stands in for a separate `assertFinite` pass.
 */
export interface CopyTask {
  readonly op: "copy";
  readonly src: Float32Array;
  readonly dst: Float32Array;
  readonly lo: number;
  readonly hi: number;
  readonly check: boolean;
}

/**
 * `dst[i] = fround(src[i] + 0)` for i in [lo, hi) (`dst` may be `src`): −0 becomes +0, every other value
 * stays (the rows of the embedding gradient no id used, `embeddingGradient`); 1 byte, 1 when every new value
 * is finite.
 */
export interface PlusZeroTask {
  readonly op: "plus_zero";
  readonly src: Float32Array;
  readonly dst: Float32Array;
  readonly lo: number;
  readonly hi: number;
}

/** Any task. */
export type Task = Sha256Task | ChunkRootTask | SgdTask | SumSquaresTask | CopyTask | PlusZeroTask;

/** How many result bytes `task` writes. */
export function resultBytes(task: Task): number {
  switch (task.op) {
    case "sha256":
    case "chunk_root":
      return 32;
    case "sgd":
    case "copy":
    case "plus_zero":
      return 8; // one flag byte, padded so the next float64 result stays aligned
    case "sum_squares":
      return 8 * task.groups.length;
  }
}

/** Roughly how long `task` takes, in bytes read: the pool hands out the longest first. */
export function taskCost(task: Task): number {
  switch (task.op) {
    case "sha256":
    case "chunk_root":
      return task.parts.reduce((n, p) => n + p.byteLength, 0);
    case "sgd":
      return 3 * 4 * (task.hi - task.lo);
    case "sum_squares":
      return task.groups.reduce((n, g) => n + g.reduce((m, a) => m + a.byteLength, 0), 0);
    case "copy":
    case "plus_zero":
      return 2 * 4 * (task.hi - task.lo);
  }
}

/** Runs `task`, writing its result into `out` (exactly `resultBytes(task)` bytes). */
export function runTask(task: Task, out: Uint8Array): void {
  switch (task.op) {
    case "sha256": {
      const hash = createHash("sha256");
      for (const p of task.parts) hash.update(p);
      out.set(new Uint8Array(hash.digest()));
      return;
    }
    case "chunk_root":
      out.set(chunkRootBytesOfParts(task.parts));
      return;
    case "sgd":
      out[0] = sgdRange(task.out, task.w, task.g, task.eta, task.lo, task.hi) ? 1 : 0;
      return;
    case "sum_squares": {
      const sums = new Float64Array(task.groups.length);
      let total = 0;
      task.groups.forEach((group, j) => {
        for (const g of group) total = sumSquaresFrom(total, g);
        sums[j] = total;
      });
      out.set(new Uint8Array(sums.buffer));
      return;
    }
    case "copy":
      task.dst.set(task.src.subarray(task.lo, task.hi), task.lo);
      out[0] = !task.check || allFinite(task.dst, task.lo, task.hi) ? 1 : 0;
      return;
    case "plus_zero":
      out[0] = plusZeroRange(task.dst, task.src, task.lo, task.hi) ? 1 : 0;
      return;
  }
}

/**
 * `data[i] = fround(w[i] − fround(η·g[i]))` for i in [lo, hi) (data may be g); true when every new value is
 * finite. One pass that also checks, in place of a second `assertFinite` pass.
 */
export function sgdRange(
  data: Float32Array,
  w: Float32Array,
  g: Float32Array,
  eta: number,
  lo: number,
  hi: number,
): boolean {
  let finite = true;
  for (let i = lo; i < hi; i++) {
    const v = Math.fround(w[i]! - Math.fround(eta * g[i]!));
    data[i] = v;
    if (v - v !== 0) finite = false;
  }
  return finite;
}

/**
 * `dst[i] = fround(src[i] + 0)` for i in [lo, hi) (dst may be src); true when every new value is finite. One
 * pass that also checks, in place of a second `assertFinite` pass.
 */
export function plusZeroRange(dst: Float32Array, src: Float32Array, lo: number, hi: number): boolean {
  let finite = true;
  for (let i = lo; i < hi; i++) {
    const v = Math.fround(src[i]! + 0);
    dst[i] = v;
    if (v - v !== 0) finite = false;
  }
  return finite;
}

/** `start` plus Σ g[i]² in float64, elements ascending, one addition each (the consensus order). */
export function sumSquaresFrom(start: number, g: Float32Array): number {
  let total = start;
  for (let i = 0; i < g.length; i++) total += g[i]! * g[i]!;
  return total;
}
