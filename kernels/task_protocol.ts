/**
 * How the calling thread and the task workers share one run of tasks (`task_pool.ts`, `task_worker.ts`):
 * the run's tasks that may leave the calling thread (every array they touch is on a `SharedArrayBuffer`),
 * where each writes its result, and one shared `Int32Array` of control words: word `NEXT` hands out task
 * indexes (each thread takes the next with one atomic add, so a task runs exactly once, on whichever thread
 * took it), word `FINISHED` counts finished tasks, and word `STATES + j` is task j's state.
 *
 * A worker that starts late, or never, only takes fewer tasks: the calling thread takes every task no one
 * else has, so no run waits for a worker to start.
 * @module
 */

import { runTask, type Task } from "./task_ops.ts";

/** Index of the next-task counter. */
export const NEXT = 0;
/** Index of the finished-tasks counter. */
export const FINISHED = 1;
/** Index of task 0's state word. */
export const STATES = 2;

/** A task not yet finished (taken or not). */
export const PENDING = 0;
/** A task that finished and wrote its result. */
export const OK = 1;
/** A task whose run threw (the calling thread runs it again, so its error surfaces there). */
export const FAILED = 2;

/** A worker's state word: it is loading (its first messages wait for it). */
export const STARTING = 0;
/** A worker's state word: waiting for a run (it may close itself by swapping this for CLOSED). */
export const IDLE = 1;
/** A worker's state word: a run was posted to it, or it is running one; it does not close. */
export const POSTED = 2;
/** A worker's state word: it closed itself after `TASK_IDLE_MS` idle (a new one takes its place). */
export const CLOSED = 3;

/**
 * How long an idle task worker waits for a run before it exits: longer than a step spends in its kernels
 * between two runs of tasks (starting a worker blocks the calling thread for 0.05-0.15 s), short enough that
 * a finished process exits soon.
 */
export const TASK_IDLE_MS = 5000;

/** One run, as posted to every worker. */
export interface TaskRun {
  readonly tasks: readonly Task[];
  /** Byte offset of each task's result in `results`. */
  readonly offsets: readonly number[];
  readonly results: Uint8Array; // on a SharedArrayBuffer
  readonly control: Int32Array; // on a SharedArrayBuffer: STATES + tasks.length words
}

/** Takes and runs tasks of `run` until none is left; returns how many this thread ran. */
export function drain(run: TaskRun, sizes: readonly number[]): number {
  const ctl = run.control;
  let ran = 0;
  for (;;) {
    const j = Atomics.add(ctl, NEXT, 1);
    if (j >= run.tasks.length) return ran;
    let state = OK;
    try {
      runTask(run.tasks[j]!, run.results.subarray(run.offsets[j]!, run.offsets[j]! + sizes[j]!));
    } catch {
      state = FAILED;
    }
    Atomics.store(ctl, STATES + j, state);
    Atomics.add(ctl, FINISHED, 1);
    Atomics.notify(ctl, FINISHED);
    ran++;
  }
}
