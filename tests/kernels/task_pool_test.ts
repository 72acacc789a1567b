import assert from "node:assert/strict";
import { evalScript } from "../_eval.ts";
import { createHash } from "node:crypto";
import { chunkRootOfParts } from "../../core/chunk_tree.ts";
import { toHex } from "../../core/hex.ts";
import { UPLOAD_CHUNK_BYTES } from "../../core/limits.ts";
import { normSquaredFrom } from "../../kernels/stage.ts";
import { sgdRange, sumSquaresFrom, type Task } from "../../kernels/task_ops.ts";
import {
  isShared,
  runTasks,
  sharedBytes,
  startTaskWorkers,
  taskPoolDisabled,
  taskWorkers,
} from "../../kernels/task_pool.ts";
import { rng, uniform } from "./_matmul_util.ts";

/** `n` random float32 values, on shared memory or not. */
function values(next: () => number, n: number, shared: boolean): Float32Array {
  const plain = uniform(next, n);
  if (!shared) return plain;
  const out = new Float32Array(sharedBytes(4 * n).buffer);
  out.set(plain);
  return out;
}

function bytesOf(x: Float32Array): Uint8Array {
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
}

/** A mix of every task kind over shared and plain arrays, each file larger than one upload chunk. */
function workload(seed: number) {
  const next = rng(seed);
  const files = [0, 1, 2, 3, 4, 5].map((i) =>
    values(next, (UPLOAD_CHUNK_BYTES >> 2) + 1000 * i + 3, i % 3 !== 2)
  );
  const w = values(next, 70_001, true), g = values(next, 70_001, true);
  g[123] = 3e38; // one update overflows to infinity: its range reports not finite
  const wPlain = values(next, 5_000, false), gPlain = values(next, 5_000, false);
  const tasks: Task[] = [
    ...files.flatMap((f): Task[] => [
      { op: "sha256", parts: [bytesOf(f).subarray(0, 8), bytesOf(f).subarray(8)] },
      { op: "chunk_root", parts: [bytesOf(f)] },
    ]),
    { op: "sgd", w, g, out: new Float32Array(sharedBytes(4 * 70_001).buffer), eta: 7, lo: 0, hi: 40_000 },
    { op: "sgd", w, g, out: g, eta: Math.fround(0.01), lo: 40_000, hi: 70_001 },
    { op: "sgd", w: wPlain, g: gPlain, out: gPlain, eta: Math.fround(0.5), lo: 0, hi: 5_000 },
    { op: "sum_squares", groups: [[files[0]!, files[1]!], [], [files[2]!]] },
  ];
  return { files, w, g, tasks };
}

/** What every task must give, computed here by the plain loops and digests, before any task runs. */
function expected(seed: number): string[] {
  const { files, w, g } = workload(seed);
  const out: string[] = files.flatMap((f) => [
    createHash("sha256").update(bytesOf(f)).digest("hex"),
    chunkRootOfParts([bytesOf(f)]),
  ]);
  const first = new Float32Array(70_001);
  out.push(sgdRange(first, w, g, 7, 0, 40_000) ? "01" : "00");
  out.push(sgdRange(g, w, g, Math.fround(0.01), 40_000, 70_001) ? "01" : "00");
  out.push("01");
  const a = sumSquaresFrom(sumSquaresFrom(0, files[0]!), files[1]!);
  const sums = new Float64Array([a, a, sumSquaresFrom(a, files[2]!)]);
  out.push(toHex(new Uint8Array(sums.buffer)));
  return out.map((h) => h.length === 2 ? h + "00".repeat(7) : h);
}

Deno.test("task pool: every task's result on 1, 2 and 3 threads is the plain loops' and digests', bit for bit", () => {
  const want = expected(41);
  for (const threads of [1, 2, 3, 2]) {
    const { tasks, g } = workload(41);
    const got = runTasks(tasks, threads).map((r) => toHex(r).padEnd(16, "0"));
    assert.deepEqual(got, want, `threads ${threads}`);
    const { g: ref, w } = workload(41);
    sgdRange(ref, w, ref, Math.fround(0.01), 40_000, 70_001);
    assert.deepEqual(
      bytesOf(g.subarray(40_000)),
      bytesOf(ref.subarray(40_000)),
      `in place, threads ${threads}`,
    );
  }
  assert.equal(want[12], "00".repeat(8), "the overflowing update is reported");
  if (taskPoolDisabled() === null) assert.ok(taskWorkers() >= 1 && taskWorkers() <= 2);
});

Deno.test("task pool: sum_squares continues normSquaredFrom's additions in its order", () => {
  const next = rng(5);
  const a = values(next, 1001, true), b = values(next, 77, true);
  const grads = { x: { a: { shape: [1001], data: a }, b: { shape: [77], data: b } } };
  const [r] = runTasks([{ op: "sum_squares", groups: [[a, b]] }], 2);
  assert.equal(new Float64Array(r!.slice().buffer)[0], normSquaredFrom(0, ["x"], grads));
});

Deno.test("task pool: a task that throws on a worker throws the same error on the calling thread", () => {
  // more chunks than a chunk tree holds: chunk_root throws RangeError wherever it runs
  const big = sharedBytes(257 * UPLOAD_CHUNK_BYTES);
  const small = sharedBytes(10);
  for (const threads of [1, 2]) {
    assert.throws(
      () =>
        runTasks([
          { op: "sha256", parts: [small] },
          { op: "chunk_root", parts: [big] },
          { op: "sha256", parts: [small] },
        ], threads),
      (e: unknown) =>
        e instanceof RangeError && /^Cannot build a chunk tree: 257 chunks, at most 256$/.test(e.message),
    );
  }
});

Deno.test("task pool: no tasks, one task and plain arrays all run on the calling thread", () => {
  assert.deepEqual(runTasks([], 3), []);
  const plain = new Uint8Array([1, 2, 3]);
  assert.equal(isShared(plain), false);
  assert.equal(isShared(sharedBytes(1)), typeof SharedArrayBuffer === "function");
  const [r] = runTasks([{ op: "sha256", parts: [plain] }], 3);
  assert.equal(toHex(r!), createHash("sha256").update(plain).digest("hex"));
});

Deno.test("a process whose steps used task workers exits by itself soon after its work", async () => {
  const script = `
    import { runTasks, sharedBytes, startTaskWorkers, taskWorkers } from ${
    JSON.stringify(new URL("../../kernels/task_pool.ts", import.meta.url).href)
  };
    startTaskWorkers(3);
    const b = sharedBytes(1 << 20);
    runTasks([0, 1, 2, 3].map(() => ({ op: "sha256", parts: [b] })), 3);
    console.log(taskWorkers());
  `;
  const t0 = performance.now();
  assert.equal((await evalScript(script)).trim(), "2");
  assert.ok(performance.now() - t0 < 20_000, "the process did not exit");
  startTaskWorkers(1); // no-op: one thread needs no worker
});

Deno.test({
  name:
    "a task worker does not keep a run's shared buffer alive once the run is over and the caller dropped it",
  ignore: Deno.build.os !== "linux", // reads the process's resident memory from /proc
  fn: async () => {
    const script = `
      import { setFlagsFromString } from "node:v8";
      import { runInNewContext } from "node:vm";
      import { runTasks, startTaskWorkers } from ${
      JSON.stringify(new URL("../../kernels/task_pool.ts", import.meta.url).href)
    };
      setFlagsFromString("--expose-gc");
      const gc = runInNewContext("gc");
      const status = () => Deno.readTextFileSync("/proc/self/status");
      const rss = () => Number(/VmRSS:\\s+(\\d+) kB/.exec(status())[1]) / 1024;
      startTaskWorkers(2);
      await new Promise((r) => setTimeout(r, 1500)); // the worker has loaded; its collections are due
      let big = new Float32Array(new SharedArrayBuffer(256 << 20)); // 256 MB, every page written below
      const n = big.length;
      const half = (k) => ({ op: "plus_zero", src: big, dst: big, lo: (k * n) / 2, hi: ((k + 1) * n) / 2 });
      runTasks([half(0), half(1)], 2);
      const before = rss();
      big = null;
      await new Promise((r) => setTimeout(r, 300)); // the worker collects once the run's message is done with
      gc();
      console.log(JSON.stringify({ before, after: rss() }));
    `;
    const { before, after } = JSON.parse(await evalScript(script));
    assert.ok(
      before - after > 200,
      `resident memory went from ${before} MB to ${after} MB, expected 256 MB less`,
    );
  },
});
