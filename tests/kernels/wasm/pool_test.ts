import assert from "node:assert/strict";
import { KernelPool } from "../../../kernels/wasm/pool.ts";
import { IDLE_MS, SPIN_MS } from "../../../kernels/wasm/pool_protocol.ts";
import { matmulWasmBytes } from "../../../kernels/wasm/matmul_wasm.ts";

/** A pool of up to `size` workers running the matmul module on a small memory of its own. */
function matmulPool(size: number, spinMs?: number): KernelPool {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 16, shared: true });
  const module = new WebAssembly.Module(matmulWasmBytes() as Uint8Array<ArrayBuffer>);
  return new KernelPool([[module, "matmul"]], memory, size, spinMs);
}

// A job that computes nothing: the matmul kernel on M = K = N = 0 and the empty column range [0, 0).
const NOTHING = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

Deno.test("a pool call on 2 threads starts one worker only, even while that worker is still starting", async () => {
  const pool = matmulPool(3);
  let here = 0;
  const local = () => {
    here++;
    const t = performance.now();
    while (performance.now() - t < 2) {
      /* a job that takes 2 ms here, so a woken worker can take the next */
    }
  };
  assert.equal(pool.workers(), 0);
  // The worker is starting, so the jobs usually run here. Not asserted: `new Worker` blocks this thread until
  // the worker's isolate exists (far longer on a loaded machine), and a worker that became ready meanwhile
  // takes the published jobs itself (CI saw it take both), which is what the pool is for.
  pool.run([NOTHING, NOTHING], local);
  assert.equal(pool.workers(), 1);
  assert.equal(await pool.whenReady(1), 1);
  const first = here;
  let calls = 0;
  while (here === first + 2 * calls && calls < 500) { // until the worker takes a job (generous on a loaded machine)
    pool.run([NOTHING, NOTHING], local);
    calls++;
  }
  assert.equal(pool.workers(), 1);
  assert.ok(here < first + 2 * calls, `all ${here - first} jobs of ${calls} calls ran here`); // the worker took one
  pool.run([NOTHING, NOTHING, NOTHING], local); // 3 threads: a second worker is started now
  assert.equal(pool.workers(), 2);
});

Deno.test("a pool call of more jobs than threads starts only the workers its thread count allows", async () => {
  const pool = matmulPool(3);
  let here = 0;
  const local = () => here++;
  pool.run(Array.from({ length: 8 }, () => NOTHING), local, 2); // 8 jobs on 2 threads: one worker
  assert.equal(pool.workers(), 1);
  assert.equal(await pool.whenReady(1), 1);
  for (let calls = 0; calls < 20; calls++) pool.run(Array.from({ length: 8 }, () => NOTHING), local, 2);
  assert.equal(pool.workers(), 1, "a second worker was started for a call on 2 threads");
  pool.run(Array.from({ length: 8 }, () => NOTHING), local, 1); // one thread: every job here, none started
  assert.equal(pool.workers(), 1);
  pool.run(Array.from({ length: 8 }, () => NOTHING), local); // by default one thread a job: up to 3 workers
  assert.equal(pool.workers(), 3);
});

Deno.test("every job of a pool call runs, on the calling thread or a worker, whatever their number", async () => {
  // The matmul kernel on [2,3]·[3,8]: job j writes its own output, so a job that never ran shows.
  const memory = new WebAssembly.Memory({ initial: 8, maximum: 16, shared: true });
  const module = new WebAssembly.Module(matmulWasmBytes() as Uint8Array<ArrayBuffer>);
  const ex = new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as {
    matmul(...args: number[]): void;
  };
  const pool = new KernelPool([[module, "matmul"]], memory, 3);
  assert.equal(await pool.whenReady(3), 3);
  const f = new Float32Array(memory.buffer);
  f.set([1, 2, 3, 4, 5, 6], 0); // A [2,3] at byte 0
  for (let k = 0; k < 3 * 8; k++) f[16 + k] = k + 1; // B [3,8] at byte 64
  const job = (j: number) => {
    const c = 1024 + 256 * j, pa = 40960 + 4096 * j; // C and packing buffers: job j's own
    return [0, 0, 64, c, pa, pa + 1024, pa + 3072, 2, 3, 8, 0, 0, 0, 8, 0];
  };
  for (const n of [2, 3, 7, 64]) {
    for (let j = 0; j < n; j++) f.fill(-1, (1024 + 256 * j) / 4, (1024 + 256 * j) / 4 + 16);
    let here = 0;
    pool.run(Array.from({ length: n }, (_, j) => job(j)), (args) => {
      here++;
      ex.matmul(...args.slice(1));
    });
    assert.ok(here <= n); // the workers may take any of them, even all
    for (let j = 0; j < n; j++) {
      const C = f.subarray((1024 + 256 * j) / 4, (1024 + 256 * j) / 4 + 16);
      for (let i = 0; i < 2; i++) {
        for (let col = 0; col < 8; col++) {
          const want = [0, 1, 2].reduce(
            (s, k) => Math.fround(s + Math.fround(f[i * 3 + k]! * f[16 + k * 8 + col]!)),
            0,
          );
          assert.equal(C[i * 8 + col], want, `calls of ${n} jobs: job ${j} C[${i},${col}]`);
        }
      }
    }
  }
});

Deno.test("a worker stays awake for SPIN_MS after a call, then sleeps, and a call still wakes it", async () => {
  const pool = matmulPool(1);
  const busy = (ms: number) => {
    const t = performance.now();
    while (performance.now() - t < ms) {
      /* a job (or a gap between calls) that takes ms here */
    }
  };
  let here = 0;
  const local = (ms: number) => () => {
    here++;
    busy(ms);
  };
  // Until the worker takes a job of a call (generous on a loaded machine); true when it did.
  const workerTakesOne = () => {
    for (let calls = 0; calls < 500; calls++) {
      const before = here;
      pool.run([NOTHING, NOTHING], local(2));
      if (here < before + 2) return true;
    }
    return false;
  };
  assert.equal(await pool.whenReady(1), 1);
  assert.ok(workerTakesOne(), "the worker took no job of 500 calls");
  // Calls a fifth of SPIN_MS apart find it still polling: on an idle machine ~1 in 300 needs a wake-up (here
  // the bound is loose, since a worker descheduled for SPIN_MS by other processes sleeps); without the
  // polling, every one does.
  const woken = pool.wakeUps;
  for (let calls = 0; calls < 200; calls++) {
    pool.run([NOTHING, NOTHING], local(0));
    busy(SPIN_MS / 5);
  }
  assert.ok(pool.wakeUps - woken < 100, `${pool.wakeUps - woken} of 200 calls woke the worker`);
  // Then it sleeps: an idle worker does not keep polling.
  const until = performance.now() + 1000;
  while (pool.awake() !== 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
  assert.equal(pool.awake(), 0, "the worker still polls 1 s after the last call");
  assert.equal(pool.workers(), 1);
  const asleep = pool.wakeUps;
  assert.ok(workerTakesOne(), "the sleeping worker took no job of 500 calls"); // woken by the call
  assert.ok(pool.wakeUps > asleep);
});

Deno.test("a pool asked to rest puts its polling workers to sleep without waiting out their polling", async () => {
  const pool = matmulPool(1, 60_000); // its worker polls for a minute
  assert.equal(await pool.whenReady(1), 1);
  const settles = async (awake: number) => {
    const until = performance.now() + 10_000; // generous on a loaded machine, far below the minute
    while (pool.awake() !== awake && performance.now() < until) await new Promise((r) => setTimeout(r, 1));
    return pool.awake();
  };
  assert.equal(await settles(1), 1, "a ready worker polls");
  pool.rest(); // before handing the task pool work
  assert.equal(await settles(0), 0, "the worker still polls after rest()");
  const woken = pool.wakeUps;
  let here = 0;
  for (let calls = 0; calls < 500 && here === 2 * calls; calls++) pool.run([NOTHING, NOTHING], () => here++);
  assert.ok(pool.wakeUps > woken, "a call woke the resting worker");
  assert.equal(await settles(1), 1, "after a call it polls again, as before the rest");
  pool.rest(); // so that it sleeps, and exits after IDLE_MS, before the test ends
  assert.equal(await settles(0), 0);
});

// A pool of one worker whose `new Worker` blocks the calling thread at least `slowMs` more (Deno's own
// Worker, wrapped), and a record of each start's time and blocking.
function timedPool(slowMs: number) {
  const starts: { at: number; ms: number }[] = [];
  const Base = globalThis.Worker;
  globalThis.Worker = class extends Base {
    constructor(url: string | URL, options?: WorkerOptions) {
      const at = performance.now();
      super(url, options);
      while (performance.now() - at < slowMs) {
        /* a start on a loaded machine */
      }
      starts.push({ at, ms: performance.now() - at });
    }
  };
  const pool = matmulPool(1);
  return { pool, starts, restore: () => (globalThis.Worker = Base) };
}

// Until the pool's worker exits after its idle timeout (asleep IDLE_MS).
async function idleExit(pool: KernelPool): Promise<void> {
  const until = performance.now() + IDLE_MS + 3000;
  while (pool.workers() !== 0 && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.equal(pool.workers(), 0, `the worker still exists ${IDLE_MS + 3000} ms after its last call`);
}

Deno.test("a call after a worker's idle exit starts a new worker at once", async () => {
  const { pool, starts, restore } = timedPool(0);
  try {
    assert.equal(await pool.whenReady(1), 1);
    pool.run([NOTHING, NOTHING], () => {});
    await idleExit(pool);
    const since = performance.now() - starts[0]!.at;
    // A start blocks for 8–23 ms here, so 20 of them have passed well before the exit (on a machine where one
    // took over 100 ms, wait until they have).
    await new Promise((r) => setTimeout(r, Math.max(0, 20 * starts[0]!.ms - since)));
    pool.run([NOTHING, NOTHING], () => {}); // requests a few seconds apart: each finds the slot CLOSED
    assert.equal(starts.length, 2, `no new worker ${since.toFixed(0)} ms after the first start`);
    assert.equal(pool.workers(), 1);
    assert.equal(await pool.whenReady(1), 1);
  } finally {
    restore();
  }
});

Deno.test("a slot whose start blocked the caller long is refilled only 20 such starts later", async () => {
  const { pool, starts, restore } = timedPool(150); // 150 ms each: the next start only 3 s after this one
  try {
    assert.equal(await pool.whenReady(1), 1);
    pool.run([NOTHING, NOTHING], () => {});
    await idleExit(pool);
    const allowed = starts[0]!.at + 20 * starts[0]!.ms;
    assert.ok(performance.now() < allowed, "the worker exited after the refill was allowed");
    for (let calls = 0; calls < 100; calls++) pool.run([NOTHING, NOTHING], () => {}); // each runs here, none starts
    assert.equal(pool.ready(1), 0);
    assert.equal(starts.length, 1);
    assert.equal(pool.workers(), 0);
    await new Promise((r) => setTimeout(r, allowed - performance.now() + 10));
    pool.run([NOTHING, NOTHING], () => {});
    assert.equal(starts.length, 2);
    assert.equal(await pool.whenReady(1), 1);
  } finally {
    restore();
  }
});
