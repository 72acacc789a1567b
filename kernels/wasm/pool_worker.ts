/**
 * A kernels worker (started by `pool.ts`): instantiates each kernel module on the shared memory, marks its
 * slot IDLE, then runs each job it is given — the function the slot's index names, on the slot's arguments
 * (e.g. a range of output columns of a matmul) — until it has been idle for `IDLE_MS`, when it swaps its
 * slot to CLOSED and exits.
 * It only reads and writes the shared memory; it needs no permissions.
 * @module
 */
/// <reference lib="deno.worker" />

import {
  CLOSED,
  DONE,
  FAILED,
  IDLE,
  IDLE_MS,
  JOB_ARGS,
  slotBase,
  WORK,
  type WorkerStart,
} from "./pool_protocol.ts";

type Kernel = (...args: number[]) => void;

self.onmessage = (e: MessageEvent<WorkerStart>) => {
  const { kernels, memory, control, slot } = e.data;
  const ctl = new Int32Array(control), s = slotBase(slot);
  const fns = kernels.map(([module, name]) =>
    new WebAssembly.Instance(module, { env: { memory } }).exports[name] as unknown as Kernel
  );
  Atomics.store(ctl, s, IDLE);
  Atomics.notify(ctl, s);
  for (;;) {
    Atomics.wait(ctl, s, IDLE, IDLE_MS);
    const state = Atomics.load(ctl, s);
    if (state === IDLE) {
      if (Atomics.compareExchange(ctl, s, IDLE, CLOSED) === IDLE) break; // idle too long: exit
      continue; // the main thread gave us a job just now
    }
    if (state !== WORK) continue; // spurious wake-up
    let next = IDLE;
    try {
      fns[ctl[s + 1]!]!(...Array.from(ctl.subarray(s + 2, s + 2 + JOB_ARGS)));
    } catch {
      next = FAILED;
    }
    Atomics.store(ctl, s, next);
    Atomics.add(ctl, DONE, 1);
    Atomics.notify(ctl, DONE);
    if (next === FAILED) break;
  }
  self.close();
};
