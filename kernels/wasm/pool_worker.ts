/**
 * A kernels worker (started by `pool.ts`): instantiates each kernel module on the shared memory, marks its
 * slot AWAKE, then, each time a call is published, takes that call's jobs (`takeJobs`: the function a job row
 * names, on its arguments, e.g. a range of output columns of a matmul) until none is left. Between calls it
 * polls for the next one for `SPIN_MS` (less when the pool is asked to rest), then sleeps until woken —
 * until it has slept for `IDLE_MS`, when it swaps its slot to CLOSED and exits.
 * It only reads and writes the shared memory; it needs no permissions.
 * @module
 */
/// <reference lib="deno.worker" />

import {
  AWAKE,
  callPending,
  CLOSED,
  FAILED,
  IDLE,
  IDLE_MS,
  JOB_ARGS,
  jobBase,
  REST,
  slotBase,
  takeJobs,
  WORK,
  type WorkerStart,
} from "./pool_protocol.ts";

type Kernel = (...args: number[]) => void;

if (JOB_ARGS !== 15) throw new Error(`pool_worker.ts passes 15 job arguments, the protocol has ${JOB_ARGS}`);

self.onmessage = (e: MessageEvent<WorkerStart>) => {
  const { kernels, memory, control, slot, size, spinMs } = e.data;
  const ctl = new Int32Array(control), s = slotBase(slot);
  const fns = kernels.map(([module, name]) =>
    new WebAssembly.Instance(module, { env: { memory } }).exports[name] as unknown as Kernel
  );
  const run = (j: number): boolean => {
    const row = jobBase(size, j);
    try {
      // the JOB_ARGS arguments one by one: a spread of them cost ~0.4 µs a job, several a decoded token's call
      const c = ctl, a = row + 1;
      fns[c[row]!]!(
        c[a]!,
        c[a + 1]!,
        c[a + 2]!,
        c[a + 3]!,
        c[a + 4]!,
        c[a + 5]!,
        c[a + 6]!,
        c[a + 7]!,
        c[a + 8]!,
        c[a + 9]!,
        c[a + 10]!,
        c[a + 11]!,
        c[a + 12]!,
        c[a + 13]!,
        c[a + 14]!,
      );
      return true;
    } catch {
      return false;
    }
  };
  Atomics.store(ctl, s, AWAKE);
  Atomics.notify(ctl, s);
  while (nextCall(ctl, s, spinMs)) {
    const ok = takeJobs(ctl, run);
    Atomics.store(ctl, s, ok ? AWAKE : FAILED);
    if (!ok) break;
  }
  self.close();
};

/**
 * Waits for a call with slot `s` AWAKE: polls for `spinMs` (`SPIN_MS`; until the pool is asked to rest), then sleeps (IDLE) until the main thread swaps
 * the slot to WORK and wakes it. True once the slot is WORK; false when it slept `IDLE_MS` and swapped itself
 * to CLOSED.
 */
function nextCall(ctl: Int32Array, s: number, spinMs: number): boolean {
  const until = performance.now() + spinMs;
  for (let polls = 1;; polls++) {
    if (callPending(ctl)) {
      Atomics.store(ctl, s, WORK); // only this worker changes an AWAKE slot
      return true;
    }
    if ((polls & 63) === 0 && (performance.now() > until || Atomics.load(ctl, REST) === 1)) break;
  }
  Atomics.store(ctl, s, IDLE);
  // A call published while the main thread still saw AWAKE did not wake us: take it now.
  if (callPending(ctl) && Atomics.compareExchange(ctl, s, IDLE, WORK) === IDLE) return true;
  for (;;) {
    const woke = Atomics.wait(ctl, s, IDLE, IDLE_MS);
    if (Atomics.load(ctl, s) === WORK) return true;
    if (woke === "timed-out" && Atomics.compareExchange(ctl, s, IDLE, CLOSED) === IDLE) return false;
  }
}
