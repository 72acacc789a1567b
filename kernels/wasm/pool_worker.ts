/**
 * A kernels worker (started by `pool.ts`): instantiates each kernel module on the shared memory, marks its
 * slot IDLE, then, each time a call is published, takes that call's jobs (`takeJobs`: the function a job row
 * names, on its arguments, e.g. a range of output columns of a matmul) until none is left — until it has
 * been idle for `IDLE_MS`, when it swaps its slot to CLOSED and exits.
 * It only reads and writes the shared memory; it needs no permissions.
 * @module
 */
/// <reference lib="deno.worker" />

import {
  CLOSED,
  FAILED,
  IDLE,
  IDLE_MS,
  JOB_ARGS,
  jobBase,
  slotBase,
  takeJobs,
  WORK,
  type WorkerStart,
} from "./pool_protocol.ts";

type Kernel = (...args: number[]) => void;

self.onmessage = (e: MessageEvent<WorkerStart>) => {
  const { kernels, memory, control, slot, size } = e.data;
  const ctl = new Int32Array(control), s = slotBase(slot);
  const fns = kernels.map(([module, name]) =>
    new WebAssembly.Instance(module, { env: { memory } }).exports[name] as unknown as Kernel
  );
  const run = (j: number): boolean => {
    const row = jobBase(size, j);
    try {
      fns[ctl[row]!]!(...Array.from(ctl.subarray(row + 1, row + 1 + JOB_ARGS)));
      return true;
    } catch {
      return false;
    }
  };
  Atomics.store(ctl, s, IDLE);
  Atomics.notify(ctl, s);
  for (;;) {
    Atomics.wait(ctl, s, IDLE, IDLE_MS);
    const state = Atomics.load(ctl, s);
    if (state === IDLE) {
      if (Atomics.compareExchange(ctl, s, IDLE, CLOSED) === IDLE) break; // idle too long: exit
      continue; // the main thread gave us a call just now
    }
    if (state !== WORK) continue; // spurious wake-up
    const ok = takeJobs(ctl, run);
    Atomics.store(ctl, s, ok ? IDLE : FAILED);
    if (!ok) break;
  }
  self.close();
};
