/**
 * Runs independent tasks (`task_ops.ts`: file digests, SGD ranges, running sums of squares) on the calling
 * thread and up to `threads − 1` task workers at once, and returns each task's result. A task runs whole on
 * one thread, so the results are the same bits for any thread count (the calling thread alone gives them
 * too); only which thread runs which task changes.
 *
 * A task may leave the calling thread only when every array it touches is on a `SharedArrayBuffer` (the
 * workers see those without a copy); any other task runs here, first, while the workers take the shared
 * ones, longest first (`taskCost`). The workers are lazy (none before the first run on more than one
 * thread), bounded (`MAX_THREADS − 1`), kept between runs, and never keep a process alive (an idle one
 * exits after `TASK_IDLE_MS`; a later run starts a new one). Workers start only when the worker module may be
 * read (`--allow-read`, `worker_access.ts`); otherwise, or when `SharedArrayBuffer` is missing, every task runs
 * on the calling thread.
 *
 * @example
 * ```ts
 * import { runTasks } from "./task_pool.ts";
 * const bytes = new Uint8Array(new SharedArrayBuffer(3));
 * const [digest] = runTasks([{ op: "sha256", parts: [bytes] }], 2); // 32 bytes, on either thread
 * ```
 * @module
 */

import { kernelThreads, MAX_THREADS } from "./threads.ts";
import { resultBytes, runTask, type Task, taskCost } from "./task_ops.ts";
import { CLOSED, drain, FAILED, FINISHED, IDLE, POSTED, STATES, type TaskRun } from "./task_protocol.ts";
import { workerRefusal } from "./worker_access.ts";
import { restKernelWorkers } from "./wasm/kernel_memory.ts";

const WORKER_URL = new URL("./task_worker.ts", import.meta.url);
const SHARED = typeof SharedArrayBuffer === "function";

const slots: (Slot | undefined)[] = [];
let disabled: string | null = null;

/** Why tasks run on the calling thread only (e.g. no read permission for the worker module), or null. */
export function taskPoolDisabled(): string | null {
  return SHARED ? disabled : "SharedArrayBuffer is unavailable";
}

/** How many task workers exist now (starting, idle or running; not those that closed). */
export function taskWorkers(): number {
  return slots.filter((s) => s !== undefined && Atomics.load(s.state, 0) !== CLOSED).length;
}

/** True when `x`'s memory is shared, so a task worker can read and write it where it is. */
export function isShared(x: ArrayBufferView): boolean {
  return SHARED && x.buffer instanceof SharedArrayBuffer;
}

/** A new zeroed byte buffer of `n` bytes, on a `SharedArrayBuffer` when there is one. */
export function sharedBytes(n: number): Uint8Array {
  return SHARED ? new Uint8Array(new SharedArrayBuffer(n)) : new Uint8Array(n);
}

function arraysOf(task: Task): readonly ArrayBufferView[] {
  switch (task.op) {
    case "sha256":
    case "chunk_root":
      return task.parts;
    case "sgd":
      return [task.w, task.g, task.out];
    case "sum_squares":
      return task.groups.flat();
    case "copy":
    case "plus_zero":
      return [task.src, task.dst];
  }
}

/**
 * Runs every task, on up to `threads` threads (default `kernelThreads()`), and returns their results in the
 * order given (`resultBytes(task)` bytes each). A task that throws is run again on the calling thread, so
 * the error surfaces here; the other tasks' results are then lost.
 */
export function runTasks(tasks: readonly Task[], threads: number = kernelThreads()): Uint8Array[] {
  const sizes = tasks.map(resultBytes);
  const offsets: number[] = [];
  let end = 0;
  for (const n of sizes) {
    offsets.push(end);
    end += Math.ceil(n / 8) * 8;
  }
  const results = sharedBytes(end);
  const out = tasks.map((_, j) => results.subarray(offsets[j]!, offsets[j]! + sizes[j]!));
  const away: number[] = [], here: number[] = [];
  const parallel = threads > 1 && tasks.length > 1 && taskPoolDisabled() === null;
  tasks.forEach((t, j) => (parallel && arraysOf(t).every(isShared) ? away : here).push(j));
  if (away.length < 2 && here.length === 0) here.push(...away.splice(0));
  away.sort((a, b) => taskCost(tasks[b]!) - taskCost(tasks[a]!) || a - b);
  const control = new Int32Array(new (SHARED ? SharedArrayBuffer : ArrayBuffer)(4 * (STATES + away.length)));
  const run: TaskRun = {
    tasks: away.map((j) => tasks[j]!),
    offsets: away.map((j) => offsets[j]!),
    results,
    control,
  };
  if (away.length > 0) {
    restKernelWorkers(); // a kernel worker polling for its next call would take a core from these tasks
    for (const w of claimWorkers(Math.min(threads - 1, away.length))) w.postMessage(run);
  }
  for (const j of here) runTask(tasks[j]!, out[j]!);
  if (away.length === 0) return out;
  const sizesAway = away.map((j) => sizes[j]!);
  drain(run, sizesAway);
  for (;;) {
    const finished = Atomics.load(control, FINISHED);
    if (finished >= away.length) break;
    Atomics.wait(control, FINISHED, finished, 50);
  }
  away.forEach((j, k) => {
    if (Atomics.load(control, STATES + k) === FAILED) runTask(tasks[j]!, out[j]!); // throws here, or agrees
  });
  return out;
}

/**
 * Starts the workers that a run on `threads` threads will use, without waiting for them (a run before they
 * are ready takes their tasks on the calling thread): a caller about to run tasks later gives the workers
 * that long to load.
 */
export function startTaskWorkers(threads: number = kernelThreads()): void {
  if (taskPoolDisabled() !== null) return;
  for (let i = 0; i < Math.min(threads - 1, MAX_THREADS - 1) && disabled === null; i++) {
    const slot = slots[i];
    if (slot !== undefined && Atomics.load(slot.state, 0) !== CLOSED) continue;
    const started = startWorker();
    if (started !== null) slots[i] = started;
  }
}

/** A task worker and its shared state word (`task_protocol.ts`: STARTING, IDLE, POSTED, CLOSED). */
interface Slot {
  readonly worker: Worker;
  readonly state: Int32Array;
}

/**
 * Up to `n` workers ready to be posted a run, each already swapped to POSTED (or still starting), starting
 * one in place of each that closed itself.
 */
function claimWorkers(n: number): Worker[] {
  const want = Math.min(n, MAX_THREADS - 1), out: Worker[] = [];
  for (let i = 0; i < want && disabled === null; i++) {
    const slot = slots[i];
    if (slot !== undefined) {
      const st = slot.state;
      if (Atomics.compareExchange(st, 0, IDLE, POSTED) === IDLE || Atomics.load(st, 0) !== CLOSED) {
        out.push(slot.worker); // idle (now POSTED), busy finishing a run, or starting: it will take this one
        continue;
      }
    }
    const started = startWorker();
    if (started === null) break;
    slots[i] = started;
    out.push(started.worker);
  }
  return out;
}

function startWorker(): Slot | null {
  const refusal = workerRefusal(WORKER_URL);
  if (refusal !== null) {
    disabled = refusal;
    return null;
  }
  const state = new Int32Array(new SharedArrayBuffer(4)); // STARTING
  const worker = new Worker(WORKER_URL, { type: "module" });
  worker.onerror = (e) => {
    e.preventDefault();
    disabled = `a task worker failed: ${e.message}`; // its runs' tasks are taken by the calling thread
    Atomics.store(state, 0, CLOSED);
  };
  worker.postMessage({ state });
  return { worker, state };
}
