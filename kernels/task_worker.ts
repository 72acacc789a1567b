/**
 * A task worker (started by `task_pool.ts`): for each run it is sent, takes and runs tasks until none is
 * left (`task_protocol.ts`); idle for `TASK_IDLE_MS`, it swaps its state word from IDLE to CLOSED and
 * exits, so it never keeps a process alive after its work (a run posted meanwhile swapped IDLE for POSTED
 * first, and then the worker stays). It only reads and writes the runs' shared buffers; it needs no
 * permissions.
 *
 * Each run it is posted clones its arrays' `SharedArrayBuffer`s into this worker, and V8 counts no memory for
 * a shared buffer in a heap that did not create it, so a worker that allocates little would collect them
 * rarely and keep every earlier run's buffers alive (a training step's files, ~550 MB a step, long after the
 * step dropped them). So after a run, at most once every `TASK_COLLECT_MS`, it collects its heap in full
 * once the run's message is done with (`gc`, exposed by setting V8's `--expose-gc`, a flag of the whole
 * process; where that cannot be set, it does not collect).
 * @module
 */
/// <reference lib="deno.worker" />

import { CLOSED, drain, IDLE, POSTED, TASK_IDLE_MS, type TaskRun } from "./task_protocol.ts";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { resultBytes } from "./task_ops.ts";

/**
 * How often at most a worker collects its heap after a run: one full collection takes it ~10 ms (runs posted
 * meanwhile are taken by the calling thread), so once a second costs a step on 2 threads ~1%, and a second's
 * runs are all it can keep alive.
 */
const TASK_COLLECT_MS = 1000;
const collect = fullCollection();
let collected = performance.now();

let state: Int32Array | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;

function idle(): void {
  Atomics.store(state!, 0, IDLE);
  clearTimeout(timer);
  timer = setTimeout(() => {
    if (Atomics.compareExchange(state!, 0, IDLE, CLOSED) === IDLE) self.close();
    else idle(); // a run was posted just now; it is on its way
  }, TASK_IDLE_MS);
}

self.onmessage = (e: MessageEvent<{ state: Int32Array } | TaskRun>) => {
  if ("state" in e.data) {
    state = e.data.state;
    idle();
    return;
  }
  const run = e.data;
  Atomics.store(state!, 0, POSTED);
  drain(run, run.tasks.map(resultBytes));
  if (collect !== null && performance.now() - collected >= TASK_COLLECT_MS) {
    collected = performance.now();
    setTimeout(collect, 0); // once this message is done with, so this run's buffers go too
  }
  idle();
};

/** V8's `gc` (a full collection of this worker's heap), or null where the runtime does not expose it. */
function fullCollection(): (() => void) | null {
  try {
    setFlagsFromString("--expose-gc");
    const gc: unknown = runInNewContext("gc");
    return typeof gc === "function" ? () => gc() : null;
  } catch {
    return null;
  }
}
