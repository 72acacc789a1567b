/**
 * The shared control block between the kernels' main thread and its workers (`pool.ts`, `pool_worker.ts`):
 * one `Int32Array` over a `SharedArrayBuffer`. Word `DONE` counts finished jobs; word `NEXT` hands out the
 * current call's jobs as one atomic word `call << 16 | jobs << 8 | next` (a thread takes job `next` by
 * swapping in `next + 1` with compare-and-swap, so each job runs exactly once, on whichever thread took it,
 * and a thread woken late for an earlier call can only take jobs of the call that is current); words
 * `STATUS + j` flag a job that threw; then one state word per worker (`slotBase`); then the job table, one
 * row of `JOB_WORDS` words per job: the index of the function to run (`WorkerStart.kernels`), then up to
 * `JOB_ARGS` i32 arguments.
 *
 * A slot's state moves STARTING → IDLE (the worker is ready) → WORK (the main thread published a call and
 * swapped IDLE for WORK) → IDLE (the worker took jobs until none was left, or FAILED after a job threw); a
 * worker idle for `IDLE_MS` swaps IDLE for CLOSED and exits, so no worker keeps a process alive after its
 * work. The main thread and the worker race on that one compare-and-swap, so exactly one of them wins.
 * @module
 */

/** Index of the finished-jobs counter. */
export const DONE = 0;
/** Index of the word that hands out the current call's jobs: `call << 16 | jobs << 8 | next`. */
export const NEXT = 1;
/** The most jobs one call may have. */
export const MAX_JOBS = 64;
/** Index of job 0's failure flag (1: the job threw on a worker). */
export const STATUS = 2;
const SLOTS = STATUS + MAX_JOBS;
/** Words per job row: function index, then `JOB_ARGS` arguments. */
export const JOB_WORDS = 16;
/** The most i32 arguments a job passes (missing ones are 0). */
export const JOB_ARGS = JOB_WORDS - 1;
/** Index of worker slot `s`'s state word. */
export const slotBase = (s: number): number => SLOTS + s;
/** Index of job `j`'s row in a control block made for `size` workers. */
export const jobBase = (size: number, j: number): number => SLOTS + size + j * JOB_WORDS;
/** Words in a control block for `size` workers. */
export const controlWords = (size: number): number => jobBase(size, MAX_JOBS);

/** A worker is loading. */
export const STARTING = 0;
/** A worker waits for a call. */
export const IDLE = 1;
/** A call is published and the worker takes its jobs. */
export const WORK = 2;
/** The worker exited after being idle (a new one may be started in the slot). */
export const CLOSED = 3;
/** A job threw on the worker; it exited and the pool stops using workers. */
export const FAILED = 4;

/** How long an idle worker waits for work before it exits. */
export const IDLE_MS = 2000;

/**
 * Takes jobs of the current call until none is left, running each with `run` (false: it threw, and its
 * failure flag is set); counts each in `DONE`. Returns false when a job this thread ran threw.
 */
export function takeJobs(ctl: Int32Array, run: (job: number) => boolean): boolean {
  let ok = true;
  for (;;) {
    const v = Atomics.load(ctl, NEXT);
    const jobs = (v >>> 8) & 255, next = v & 255;
    if (next >= jobs) return ok;
    if (Atomics.compareExchange(ctl, NEXT, v, v + 1) !== v) continue;
    if (!run(next)) {
      Atomics.store(ctl, STATUS + next, 1);
      ok = false;
    }
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
  }
}

/** The message that starts a worker. */
export interface WorkerStart {
  /** The modules a job may run, each with the name of its exported function: a job row's word 0 indexes this. */
  readonly kernels: readonly (readonly [WebAssembly.Module, string])[];
  readonly memory: WebAssembly.Memory;
  readonly control: SharedArrayBuffer;
  readonly slot: number;
  /** How many worker slots the control block has (where the job table begins). */
  readonly size: number;
}
