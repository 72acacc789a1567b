/**
 * A small, bounded pool of workers that run the kernel modules on one shared WebAssembly memory, so a call
 * can be split by output columns across cores (`matmul_wasm.ts` decides the split; this file only runs it).
 * A job is `[kernel index, ...i32 arguments]`, the index into the `kernels` the pool was made with; each job
 * must be self-contained (its own scratch buffers), since any thread may take any job.
 *
 * The pool never changes a bit: every job computes whole output elements with the module's one k loop, and
 * which thread computes which columns does not enter any sum. It is lazy (no worker exists before the first
 * call that asks for more than one thread), bounded (at most `MAX_THREADS − 1` workers), and never keeps a
 * process alive: a worker polls for the next call for `SPIN_MS` after its last (so a run of calls pays no
 * wake-ups), then sleeps; asleep for `IDLE_MS` (`pool_protocol.ts`), it exits and a later call starts a new one.
 * While a worker is starting, its share runs on the calling thread, so results never wait for a start-up.
 * Workers are started only when the worker module may be read (`--allow-read`); otherwise every job runs on
 * the calling thread. Workers inherit the process's permissions (Deno's narrower worker
 * permissions are unstable) but touch only the shared memory.
 * @module
 */

import {
  AWAKE,
  CLOSED,
  controlWords,
  DONE,
  FAILED,
  IDLE,
  JOB_WORDS,
  jobBase,
  MAX_JOBS,
  NEXT,
  REST,
  slotBase,
  SPIN_MS,
  STARTING,
  STATUS,
  takeJobs,
  WORK,
  type WorkerStart,
} from "./pool_protocol.ts";
import { workerRefusal } from "../worker_access.ts";

const WORKER_URL = new URL("./pool_worker.ts", import.meta.url);
/** How long the calling thread polls for the workers' last jobs before it sleeps until they are done. */
const WAIT_SPIN_MS = 2;
/**
 * Starting a worker blocks the calling thread until the worker's isolate exists (8–23 ms here, far more on a
 * loaded machine), so a slot is refilled only once `START_SHARE` times its last start's blocking time has
 * passed since that start: starts take at most 1/20 of the calling thread's time. A start of up to 100 ms
 * allows a refill sooner than a worker can exit (`IDLE_MS` asleep), so a call after an idle exit (requests a
 * few seconds apart) gets its worker back at once; a start that took a second allows the next 20 s later.
 */
const START_SHARE = 20;

/** Runs jobs (a kernel index and its i32 arguments each) on the calling thread and up to `size` workers. */
export class KernelPool {
  readonly #ctl: Int32Array;
  readonly #started: boolean[];
  readonly #spawnedAt: number[];
  readonly #startMs: number[]; // how long each slot's last start blocked the calling thread
  #disabled: string | null = null;
  #call = 0;
  #wakeUps = 0;

  /**
   * `size` is the most workers the pool will ever run (the calling thread is not counted); `spinMs` how long
   * a worker polls for the next call before it sleeps (`SPIN_MS`; tests lengthen it).
   */
  constructor(
    readonly kernels: readonly (readonly [WebAssembly.Module, string])[],
    readonly memory: WebAssembly.Memory,
    readonly size: number,
    readonly spinMs: number = SPIN_MS,
  ) {
    this.#ctl = new Int32Array(new SharedArrayBuffer(4 * controlWords(size)));
    for (let s = 0; s < size; s++) this.#ctl[slotBase(s)] = CLOSED;
    this.#started = new Array(size).fill(false);
    this.#spawnedAt = new Array(size).fill(-Infinity);
    this.#startMs = new Array(size).fill(0);
  }

  /** How many workers exist now (starting, idle or working; not those that exited). */
  workers(): number {
    let n = 0;
    for (let s = 0; s < this.size; s++) {
      const state = Atomics.load(this.#ctl, slotBase(s));
      if (state !== CLOSED && state !== FAILED) n++;
    }
    return n;
  }

  /** How many times a call found a worker asleep and woke it (back-to-back calls find workers awake). */
  get wakeUps(): number {
    return this.#wakeUps;
  }

  /**
   * Asks the workers polling for the next call to sleep now instead of after `SPIN_MS`: before the calling
   * thread hands other threads work (the task pool's), so that no core is taken by polling. The next call
   * wakes them, as after any sleep.
   */
  rest(): void {
    Atomics.store(this.#ctl, REST, 1);
  }

  /** Why workers are not used (null while they may be), e.g. no read permission for the worker module. */
  get disabled(): string | null {
    return this.#disabled;
  }

  /** How many workers are awake now: polling for the next call (for `SPIN_MS` after their last) or working. */
  awake(): number {
    let n = 0;
    for (let s = 0; s < this.size; s++) {
      const state = Atomics.load(this.#ctl, slotBase(s));
      if (state === AWAKE || state === WORK) n++;
    }
    return n;
  }

  /** How many of the first `helpers` workers are ready now, awake or asleep (starting the missing ones). */
  ready(helpers: number): number {
    const n = Math.min(helpers, this.size);
    let idle = 0;
    for (let s = 0; s < n; s++) {
      const state = Atomics.load(this.#ctl, slotBase(s));
      if (state === IDLE || state === AWAKE) idle++;
      else if (state === CLOSED) this.#spawn(s);
    }
    return idle;
  }

  /** Resolves once `helpers` workers are ready (or the pool is disabled, or `timeoutMs` passed): the count. */
  async whenReady(helpers: number, timeoutMs = 10_000): Promise<number> {
    const until = Date.now() + timeoutMs;
    let idle = this.ready(helpers);
    while (idle < Math.min(helpers, this.size) && this.#disabled === null && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 5));
      idle = this.ready(helpers);
    }
    return idle;
  }

  /**
   * Runs every job, on this thread (with `local`) and up to `threads − 1` idle workers alike (by default one
   * thread a job): the call is published and each thread takes the next job not yet taken (so a worker that
   * wakes late takes fewer, and none waits for it); returns when every job is done. More jobs than threads
   * balance threads of unequal speed: a thread that finishes its job early takes the next. Throws what
   * `local` throws (after every job is done); a job that threw on a worker is run again here, so its error
   * surfaces on this thread.
   */
  run(
    jobs: readonly (readonly number[])[],
    local: (args: readonly number[]) => void,
    threads: number = jobs.length,
  ): void {
    const ctl = this.#ctl, n = jobs.length;
    if (n > MAX_JOBS) {
      for (const job of jobs) local(job);
      return;
    }
    for (let j = 0; j < n; j++) {
      const row = jobBase(this.size, j);
      ctl.fill(0, row, row + JOB_WORDS);
      ctl.set(jobs[j]!, row); // read by a worker only after it takes the job from NEXT
    }
    ctl.fill(0, STATUS, STATUS + n);
    Atomics.store(ctl, REST, 0);
    const start = Atomics.load(ctl, DONE);
    this.#call = (this.#call + 1) & 0xffff;
    Atomics.store(ctl, NEXT, (this.#call << 16) | (n << 8));
    // Only the first `threads − 1` slots (at most n − 1): a call never starts a worker beyond those it can
    // use, even while one of those is still starting (its jobs then run here).
    for (let slot = 0; slot < Math.min(this.size, n - 1, threads - 1); slot++) {
      const s = slotBase(slot);
      const state = Atomics.load(ctl, s);
      if (state === CLOSED) this.#spawn(slot);
      else if (state === IDLE && Atomics.compareExchange(ctl, s, IDLE, WORK) === IDLE) {
        Atomics.notify(ctl, s);
        this.#wakeUps++;
      }
    }
    let error: unknown = null;
    takeJobs(ctl, (j) => {
      try {
        local(jobs[j]!);
      } catch (e) {
        error ??= e;
      }
      return true;
    });
    // Poll for the workers' last jobs for up to WAIT_SPIN_MS, then sleep: a worker a few hundred microseconds
    // behind (one token's matvec split in two) is met without a wake-up, which costs tens of microseconds.
    const until = performance.now() + WAIT_SPIN_MS;
    for (let polls = 1;; polls++) {
      const done = Atomics.load(ctl, DONE);
      if (((done - start) | 0) >= n) break;
      if ((polls & 63) === 0 && performance.now() > until) Atomics.wait(ctl, DONE, done, 20);
    }
    if (error !== null) throw error;
    for (let j = 0; j < n; j++) {
      if (Atomics.load(ctl, STATUS + j) === 0) continue;
      this.#disabled = "a worker's job failed";
      local(jobs[j]!); // the same arguments here: the same result or the same error, on this thread
    }
  }

  #spawn(slot: number): void {
    if (this.#disabled !== null) return;
    if (!this.#started[slot]) {
      const refusal = workerRefusal(WORKER_URL);
      if (refusal !== null) {
        this.#disabled = refusal;
        return;
      }
      this.#started[slot] = true;
    }
    const s = slotBase(slot), now = performance.now();
    if (now - this.#spawnedAt[slot]! < START_SHARE * this.#startMs[slot]!) return;
    if (Atomics.compareExchange(this.#ctl, s, CLOSED, STARTING) !== CLOSED) return;
    const worker = new Worker(WORKER_URL, { type: "module" });
    this.#spawnedAt[slot] = now;
    this.#startMs[slot] = performance.now() - now;
    worker.onerror = (e) => {
      e.preventDefault();
      this.#disabled = `a worker failed to start: ${e.message}`;
      Atomics.store(this.#ctl, s, FAILED);
    };
    const start: WorkerStart = {
      kernels: this.kernels,
      memory: this.memory,
      control: this.#ctl.buffer as SharedArrayBuffer,
      slot,
      size: this.size,
      spinMs: this.spinMs,
    };
    worker.postMessage(start);
  }
}
