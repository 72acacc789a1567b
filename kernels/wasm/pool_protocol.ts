/**
 * The shared control block between the kernels' main thread and its workers (`pool.ts`, `pool_worker.ts`):
 * one `Int32Array` over a `SharedArrayBuffer`, word 0 counting finished jobs and then one slot of
 * `SLOT_WORDS` words per worker: its state, the index of the function to run (`WorkerStart.kernels`), then
 * up to `JOB_ARGS` i32 arguments.
 *
 * A slot's state moves STARTING → IDLE (the worker is ready) → WORK (the main thread wrote a job and
 * swapped IDLE for WORK) → IDLE (the worker finished, or FAILED with the job unfinished); a worker idle for
 * `IDLE_MS` swaps IDLE for CLOSED and exits, so no worker keeps a process alive after its work. The main
 * thread and the worker race on that one compare-and-swap, so exactly one of them wins.
 * @module
 */

/** Index of the finished-jobs counter. */
export const DONE = 0;
/** Words per worker slot: state, function index, then `JOB_ARGS` arguments. */
export const SLOT_WORDS = 16;
/** The most i32 arguments a job passes (missing ones are 0). */
export const JOB_ARGS = SLOT_WORDS - 2;
/** Index of slot `s`'s state word (its arguments follow). */
export const slotBase = (s: number): number => 1 + s * SLOT_WORDS;

/** A worker is loading. */
export const STARTING = 0;
/** A worker waits for a job. */
export const IDLE = 1;
/** A job is written and the worker owns the slot. */
export const WORK = 2;
/** The worker exited after being idle (a new one may be started in the slot). */
export const CLOSED = 3;
/** The worker's job threw; it exited and the slot is not used again. */
export const FAILED = 4;

/** How long an idle worker waits for work before it exits. */
export const IDLE_MS = 2000;

/** The message that starts a worker. */
export interface WorkerStart {
  /** The modules a job may run, each with the name of its exported function: job word 1 indexes this. */
  readonly kernels: readonly (readonly [WebAssembly.Module, string])[];
  readonly memory: WebAssembly.Memory;
  readonly control: SharedArrayBuffer;
  readonly slot: number;
}
