import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { matmul, matmulReference } from "../../kernels/matmul.ts";
import { MAX_THREADS, parseThreads } from "../../kernels/threads.ts";
import {
  columnSplit,
  THREAD_MIN_WORK,
  wasmMatmul,
  wasmMatmulThreadsDisabled,
  wasmMatmulThreadsReady,
} from "../../kernels/wasm/matmul_wasm.ts";
import {
  adversarial,
  assertThreadsMatchReference,
  firstBitDifference,
  rng,
  uniform,
} from "./_matmul_util.ts";

/** How long the workers may take to start: seconds when the whole suite runs on two loaded cores. */
const STARTUP_MS = 120_000;

const PROBE = new URL("./_threads_probe.ts", import.meta.url).pathname;

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof ProtocolError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return "no error";
}

Deno.test("NEURO_THREADS: unset is the CPU count (capped), a valid count is used, anything else is invalid_setting", () => {
  assert.equal(parseThreads(undefined, 2), 2);
  assert.equal(parseThreads("", 64), MAX_THREADS);
  assert.equal(parseThreads(undefined, 0), 1);
  assert.equal(parseThreads("3", 2), 3);
  assert.equal(parseThreads(String(MAX_THREADS), 2), MAX_THREADS);
  for (const bad of ["0", "-1", "2.5", "02", " 2", "two", "1e1", String(MAX_THREADS + 1)]) {
    assert.equal(
      codeOf(() => parseThreads(bad, 2)),
      `invalid_setting: Cannot use NEURO_THREADS: value is ${
        JSON.stringify(bad)
      }, expected an integer 1..${MAX_THREADS}`,
    );
  }
});

Deno.test("columnSplit covers every column once, in order, in whole 96- or 12-column units, and keeps small calls whole", () => {
  assert.deepEqual(columnSplit(1, 8, 8, 4), [[0, 8]]); // below THREAD_MIN_WORK
  assert.deepEqual(columnSplit(64, 576, 1536, 1), [[0, 1536]]);
  assert.deepEqual(columnSplit(64, 576, 1536, 2), [[0, 768], [768, 1536]]);
  assert.deepEqual(columnSplit(1, 576, 576, 4), [[0, 192], [192, 384], [384, 480], [480, 576]]);
  assert.deepEqual(columnSplit(1, THREAD_MIN_WORK, 13, 3), [[0, 12], [12, 13]]);
  assert.deepEqual(columnSplit(1, THREAD_MIN_WORK, 12, 3), [[0, 12]]);
  for (const [M, K, N, t] of [[3, 999, 97, 3], [50, 100, 1000, 3], [9, 576, 49152, 2], [1, 1 << 18, 7, 2]]) {
    const parts = columnSplit(M!, K!, N!, t!);
    assert.ok(parts.length <= t!);
    let at = 0;
    for (const [lo, hi] of parts) {
      assert.equal(lo, at);
      assert.ok(hi > lo && lo % 12 === 0);
      at = hi;
    }
    assert.equal(at, N);
  }
});

Deno.test("matmul on 1, 2 and 3 threads is bit-identical to the reference on random and adversarial shapes", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng(71);
  // Shapes above THREAD_MIN_WORK: ragged M (not a multiple of the 3-row tile), N with partial 12-column panels
  // and partial 96-column groups, N too small for one group per thread, and a wide N split in whole groups.
  const shapes: [number, number, number][] = [[37, 100, 97], [5, 600, 101], [2, 1200, 300], [64, 64, 200]];
  for (const [M, K, N] of shapes) {
    assertThreadsMatchReference("uniform", uniform(next, M * K), uniform(next, K * N), M, K, N);
  }
  for (const [M, K, N] of [[7, 333, 130], [31, 90, 193]] as const) {
    assertThreadsMatchReference("adversarial", adversarial(next, M * K), adversarial(next, K * N), M, K, N);
  }
  for (let t = 0; t < 3; t++) {
    const M = 1 + (next() % 40),
      K = 64 + (next() % 400),
      N = Math.ceil(THREAD_MIN_WORK / (M * K)) + (next() % 300);
    assertThreadsMatchReference(`random ${t}`, uniform(next, M * K), uniform(next, K * N), M, K, N);
  }
});

Deno.test("matmul on many threads grows the shared memory and stays exact on the calls after", async () => {
  await wasmMatmulThreadsReady(3);
  const next = rng(72);
  const [M, K, N] = [3, 4000, 2000]; // more memory than any earlier call in this file
  const a = uniform(next, M * K), b = uniform(next, K * N);
  const want = new Float32Array(M * N), got = new Float32Array(M * N);
  matmulReference(a, b, want, M, K, N, "nt");
  wasmMatmul(a, b, got, M, K, N, "nt", 3);
  assert.equal(firstBitDifference(got, want), -1);
  matmul(a, b, got, M, K, N, "nt"); // the default thread count
  assert.equal(firstBitDifference(got, want), -1);
});

async function probe(env: Record<string, string>, permissions: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...permissions, PROBE],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout)) as Record<string, unknown>;
}

Deno.test("a devnet training step and greedy answer have the same roots and ids on 1, 2, 3 threads as on the reference loops", async () => {
  const perms = ["--allow-read", "--allow-env"];
  const runs = await Promise.all([
    probe({ NEURO_KERNELS: "reference" }, perms),
    probe({ NEURO_THREADS: "1" }, perms),
    probe({ NEURO_THREADS: "2" }, perms),
    probe({ NEURO_THREADS: "3" }, perms),
    probe({ NEURO_THREADS: "2" }, []), // no --allow-read: no workers, the same bits on one thread
  ]);
  const [reference, ...rest] = runs;
  assert.deepEqual(rest.map((r) => r.ready), [1, 2, 3, 1]);
  assert.match(String(rest[3]!.disabled), /^no read permission for /);
  assert.deepEqual(rest.map((r) => r.taskWorkers), [0, 1, 2, 0]); // the step's task workers: threads − 1
  const strip = ({ ready: _r, disabled: _d, taskWorkers: _w, ...roots }: Record<string, unknown>) => roots;
  for (const r of rest) assert.deepEqual(strip(r), strip(reference!));
});

Deno.test("a process whose matmuls used worker threads exits by itself soon after its work", async () => {
  const t0 = performance.now();
  const out = await probe({ NEURO_THREADS: "3" }, ["--allow-read", "--allow-env"]);
  assert.equal(out.ready, 3);
  assert.ok(performance.now() - t0 < 20_000, "the process did not exit");
});
