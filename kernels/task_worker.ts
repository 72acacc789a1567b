/**
 * A task worker (started by `task_pool.ts`): for each run it is sent, takes and runs tasks until none is
 * left (`task_protocol.ts`); idle for `TASK_IDLE_MS`, it swaps its state word from IDLE to CLOSED and
 * exits, so it never keeps a process alive after its work (a run posted meanwhile swapped IDLE for POSTED
 * first, and then the worker stays). It only reads and writes the runs' shared buffers; it needs no
 * permissions.
 * @module
 */
/// <reference lib="deno.worker" />

import { CLOSED, drain, IDLE, POSTED, TASK_IDLE_MS, type TaskRun } from "./task_protocol.ts";
import { resultBytes } from "./task_ops.ts";

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
  idle();
};
