/**
 * A small, bounded pool of workers that run the kernel modules on one shared WebAssembly memory, so a call
 * can be split by output columns across cores (`matmul_wasm.ts` decides the split; this file only runs it).
 * A job is `[kernel index, ...i32 arguments]`, the index into the `kernels` the pool was made with.
 *
 * The pool never changes a bit: every job computes whole output elements with the module's one k loop, and
 * which thread computes which columns does not enter any sum. It is lazy (no worker exists before the first
 * call that asks for more than one thread), bounded (at most `MAX_THREADS − 1` workers), and never keeps a
 * process alive: an idle worker exits after `IDLE_MS` (`pool_protocol.ts`) and a later call starts a new one.
 * While a worker is starting, its share runs on the calling thread, so results never wait for a start-up.
 * Workers are started only when the worker module may be read (`--allow-read`); otherwise every job runs on
 * the calling thread. Workers inherit the process's permissions (Deno's narrower worker
 * permissions are unstable) but touch only the shared memory.
 * @module
 */

import {
  CLOSED,
  DONE,
  FAILED,
  IDLE,
  SLOT_WORDS,
  slotBase,
  STARTING,
  WORK,
  type WorkerStart,
} from "./pool_protocol.ts";

const WORKER_URL = new URL("./pool_worker.ts", import.meta.url);
const SPINS = 4096; // polls of the done counter before the calling thread sleeps on it
/**
 * The shortest time between two starts of a worker in one slot. Starting a worker blocks the calling thread
 * until the worker's isolate exists (tens of milliseconds, far more on a loaded machine), so a slot whose
 * worker exited is refilled at most this often.
 */
const RESPAWN_MS = 5000;

/** Runs jobs (a kernel index and its i32 arguments each) on the calling thread and up to `size` workers. */
export class KernelPool {
  readonly #ctl: Int32Array;
  readonly #started: boolean[];
  readonly #spawnedAt: number[];
  #disabled: string | null = null;

  /** `size` is the most workers the pool will ever run (the calling thread is not counted). */
  constructor(
    readonly kernels: readonly (readonly [WebAssembly.Module, string])[],
    readonly memory: WebAssembly.Memory,
    readonly size: number,
  ) {
    this.#ctl = new Int32Array(new SharedArrayBuffer(4 * (1 + size * SLOT_WORDS)));
    for (let s = 0; s < size; s++) this.#ctl[slotBase(s)] = CLOSED;
    this.#started = new Array(size).fill(false);
    this.#spawnedAt = new Array(size).fill(-Infinity);
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

  /** Why workers are not used (null while they may be), e.g. no read permission for the worker module. */
  get disabled(): string | null {
    return this.#disabled;
  }

  /** How many of the first `helpers` workers are idle and ready now (starting the missing ones). */
  ready(helpers: number): number {
    const n = Math.min(helpers, this.size);
    let idle = 0;
    for (let s = 0; s < n; s++) {
      const state = Atomics.load(this.#ctl, slotBase(s));
      if (state === IDLE) idle++;
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
   * Runs `jobs[0]` with `local` on this thread and each other job on an idle worker (or here, after its own,
   * when none is idle); returns when every job is done. Throws what `local` throws; a job whose worker
   * failed is run again here, so its error surfaces on this thread.
   */
  run(jobs: readonly (readonly number[])[], local: (args: readonly number[]) => void): void {
    const ctl = this.#ctl;
    const here: (readonly number[])[] = [jobs[0]!];
    const given: [slot: number, job: number][] = [];
    const start = Atomics.load(ctl, DONE);
    // Only the first jobs.length − 1 slots: a call on n threads never starts a worker beyond the n − 1 it
    // uses, even while one of those is still starting (its job then runs here).
    const slots = Math.min(this.size, jobs.length - 1);
    let slot = 0;
    for (let j = 1; j < jobs.length; j++) {
      let placed = false;
      for (; slot < slots && !placed; slot++) {
        const s = slotBase(slot);
        const state = Atomics.load(ctl, s);
        if (state === CLOSED) this.#spawn(slot);
        if (state !== IDLE) continue;
        ctl.fill(0, s + 1, s + SLOT_WORDS);
        ctl.set(jobs[j]!, s + 1); // the worker reads its arguments only after it sees WORK
        if (Atomics.compareExchange(ctl, s, IDLE, WORK) === IDLE) {
          Atomics.notify(ctl, s);
          given.push([slot, j]);
          placed = true;
        }
      }
      if (!placed) here.push(jobs[j]!);
    }
    let error: unknown = null;
    try {
      for (const job of here) local(job);
    } catch (e) {
      error = e;
    }
    let spins = 0;
    for (;;) {
      const done = Atomics.load(ctl, DONE);
      if (((done - start) | 0) >= given.length) break;
      if (++spins > SPINS) Atomics.wait(ctl, DONE, done, 20);
    }
    if (error !== null) throw error;
    for (const [s, j] of given) {
      if (Atomics.load(ctl, slotBase(s)) !== FAILED) continue;
      this.#disabled = "a worker's job failed";
      local(jobs[j]!); // the same arguments here: the same result or the same error, on this thread
    }
  }

  #spawn(slot: number): void {
    if (this.#disabled !== null) return;
    if (!this.#started[slot]) {
      let granted = false;
      try {
        granted = WORKER_URL.protocol === "file:" &&
          Deno.permissions.querySync({ name: "read", path: WORKER_URL }).state === "granted";
      } catch {
        granted = false;
      }
      if (!granted) {
        this.#disabled = `no read permission for ${WORKER_URL.pathname}`;
        return;
      }
      this.#started[slot] = true;
    }
    const s = slotBase(slot), now = performance.now();
    if (now - this.#spawnedAt[slot]! < RESPAWN_MS) return;
    if (Atomics.compareExchange(this.#ctl, s, CLOSED, STARTING) !== CLOSED) return;
    this.#spawnedAt[slot] = now;
    const worker = new Worker(WORKER_URL, { type: "module" });
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
    };
    worker.postMessage(start);
  }
}
