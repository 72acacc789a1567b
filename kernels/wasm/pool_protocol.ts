/**
 * The shared control block between the kernels' main thread and its workers (`pool.ts`, `pool_worker.ts`):
 * one `Int32Array` over a `SharedArrayBuffer`. Word `DONE` counts finished jobs; word `NEXT` hands out the
 * current call's jobs as one atomic word `call << 16 | jobs << 8 | next` (a thread takes job `next` by
 * swapping in `next + 1` with compare-and-swap, so each job runs exactly once, on whichever thread took it,
 * and a thread woken late for an earlier call can only take jobs of the call that is current); words
 * `STATUS + j` flag a job that threw; word `REST` asks polling workers to sleep; then one state word per
 * worker (`slotBase`); then the job table, one row of `JOB_WORDS` words per job: the index of the function to
 * run (`WorkerStart.kernels`), then up to `JOB_ARGS` i32 arguments.
 *
 * A slot's state moves STARTING → AWAKE (the worker is ready and polls `NEXT` for a call) → WORK (it saw a
 * call's jobs and swapped AWAKE for WORK) → AWAKE (it took jobs until none was left, or FAILED after a job
 * threw). A worker that saw no call for `SPIN_MS` swaps AWAKE for IDLE and sleeps; the main thread swaps
 * IDLE for WORK when it publishes a call and wakes it. Polling first means back-to-back calls (one token's
 * matvecs, microseconds apart) find the worker awake, with no wake-up latency (tens of microseconds each);
 * sleeping after `SPIN_MS` means an idle worker does not burn a core. A worker asleep for `IDLE_MS` swaps
 * IDLE for CLOSED and exits, so no worker keeps a process alive after its work. The main thread and the
 * worker race on each of these compare-and-swaps, so exactly one of them wins.
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
/**
 * Index of the rest flag: 1 asks polling workers to sleep at once (the calling thread is about to run other
 * threads' work, e.g. the task pool's hashing, which a polling worker would take a core from); a call clears it.
 */
export const REST = STATUS + MAX_JOBS;
const SLOTS = REST + 1;
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
/** A worker sleeps until the main thread wakes it for a call. */
export const IDLE = 1;
/** A call is published and the worker takes its jobs. */
export const WORK = 2;
/** The worker exited after being idle (a new one may be started in the slot). */
export const CLOSED = 3;
/** A job threw on the worker; it exited and the pool stops using workers. */
export const FAILED = 4;
/** A worker polls for a call (for up to `SPIN_MS`, then it sleeps: IDLE). */
export const AWAKE = 5;

/**
 * How long a worker polls for the next call after its jobs before it sleeps: longer than the gaps between one
 * generated token's calls (at most ~0.35 ms between the calls of a SmolLM2 token here, the widest
 * being the argmax between tokens), short enough that a worker left idle gives its core back at once.
 */
export const SPIN_MS = 0.5;
/** How long a sleeping worker waits for work before it exits. */
export const IDLE_MS = 2000;

/** True when the current call has a job no thread has taken yet. */
export function callPending(ctl: Int32Array): boolean {
  const v = Atomics.load(ctl, NEXT);
  return (v & 255) < ((v >>> 8) & 255);
}

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
  /** How long the worker polls for the next call before it sleeps (`SPIN_MS` but in tests). */
  readonly spinMs: number;
}
