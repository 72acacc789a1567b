import assert from "node:assert/strict";
import { FORCE_REFERENCE, matmul, type MatmulLayout, matmulReference } from "../../kernels/matmul.ts";
import { ProtocolError } from "../../core/errors.ts";
import { describeDifference, firstBitDifference, LAYOUTS, rng, seeds, uniform } from "./_matmul_util.ts";

/** The definition, literally: element by element, k ascending, float32 rounding after every * and +. */
function definition(a: Float32Array, b: Float32Array, M: number, K: number, N: number, layout: MatmulLayout) {
  const c = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let k = 0; k < K; k++) {
        const x = layout[0] === "t" ? a[k * M + i]! : a[i * K + k]!;
        const y = layout[1] === "t" ? b[j * K + k]! : b[k * N + j]!;
        acc = Math.fround(acc + Math.fround(x * y));
      }
      c[i * N + j] = acc;
    }
  }
  return c;
}

function transpose(x: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = x[r * cols + c]!;
  return t;
}

Deno.test("matmul computes a small product exactly in every layout", () => {
  const a = new Float32Array([1, 2, 3, 4, 5, 6]); // A: [2,3]
  const b = new Float32Array([7, 8, 9, 10, 11, 12]); // B: [3,2]
  const want = [58, 64, 139, 154];
  for (const layout of LAYOUTS) {
    const aa = layout[0] === "t" ? transpose(a, 2, 3) : a;
    const bb = layout[1] === "t" ? transpose(b, 3, 2) : b;
    for (const f of [matmul, matmulReference]) {
      const c = new Float32Array(4);
      f(aa, bb, c, 2, 3, 2, layout);
      assert.deepEqual([...c], want, `${f.name} ${layout}`);
    }
  }
});

Deno.test("matmulReference sums k in ascending order in float32 (2^24 + 1 is absorbed before - 2^24)", () => {
  const a = new Float32Array([1, 1, 1]); // A: [1,3]
  const b = new Float32Array([2 ** 24, 1, -(2 ** 24)]); // B: [3,1]
  const c = new Float32Array([99]);
  matmulReference(a, b, c, 1, 3, 1);
  assert.equal(c[0], 0); // float64 or reversed order would give 1
  matmulReference(a, new Float32Array([-(2 ** 24), 1, 2 ** 24]), c, 1, 3, 1);
  assert.equal(c[0], 1); // -2^24 + 1 is exact in float32
});

Deno.test("matmulReference rounds every product before adding it (no fused multiply-add)", () => {
  const x = 1 + 2 ** -12; // exact in float32; x·x = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11
  const c = new Float32Array(1);
  matmulReference(new Float32Array([-1, x]), new Float32Array([1, x]), c, 1, 2, 1);
  assert.equal(c[0], 2 ** -11); // a fused multiply-add would give 2^-11 + 2^-24
});

Deno.test("matmul starts every sum at +0: a sum of -0 products is +0 and K = 0 writes +0", () => {
  const c = new Float32Array(1);
  matmulReference(new Float32Array([-0, 1]), new Float32Array([1, -0]), c, 1, 2, 1);
  assert.ok(Object.is(c[0], 0));
  const out = new Float32Array([5, -0, 7, 8]);
  matmul(new Float32Array(0), new Float32Array(0), out, 2, 0, 2);
  assert.deepEqual([...out].map((v) => Object.is(v, 0)), [true, true, true, true]);
});

Deno.test("matmulReference equals the literal definition on random shapes in every layout", () => {
  for (const seed of seeds([1, 2, 3])) {
    const next = rng(seed);
    for (let t = 0; t < 12; t++) {
      const M = 1 + (next() % 9), K = next() % 40, N = 1 + (next() % 23);
      const layout = LAYOUTS[next() % 4]!;
      const a = uniform(next, M * K), b = uniform(next, K * N);
      const got = new Float32Array(M * N);
      matmulReference(a, b, got, M, K, N, layout);
      const want = definition(a, b, M, K, N, layout);
      const i = firstBitDifference(got, want);
      assert.equal(i, -1, `seed ${seed} ${layout} ${M}x${K}x${N}: ${describeDifference(got, want, i)}`);
    }
  }
});

Deno.test("matmul uses only the first M*K, K*N and M*N elements of longer buffers", () => {
  const a = new Float32Array([1, 2, 99]), b = new Float32Array([3, 4, 99]), c = new Float32Array([0, 42]);
  matmul(a, b, c, 1, 2, 1);
  assert.deepEqual([...c], [11, 42]);
});

function expectInvalid(fn: () => void, message: string) {
  assert.throws(
    fn,
    (e: unknown) => e instanceof ProtocolError && e.code === "invalid_tensor" && e.message === message,
  );
}

Deno.test("matmul rejects short buffers, bad sizes, bad layouts and aliasing with invalid_tensor and leaves out unchanged", () => {
  const out = new Float32Array([7, 7, 7, 7]);
  const a = new Float32Array(6), b = new Float32Array(6);
  for (const f of [matmul, matmulReference]) {
    expectInvalid(
      () => f(new Float32Array(5), b, out, 2, 3, 2),
      "Cannot multiply matrices: a has 5 elements, expected at least 6 (M=2 K=3 N=2)",
    );
    expectInvalid(
      () => f(a, new Float32Array(5), out, 2, 3, 2),
      "Cannot multiply matrices: b has 5 elements, expected at least 6 (M=2 K=3 N=2)",
    );
    expectInvalid(
      () => f(a, b, new Float32Array(3), 2, 3, 2),
      "Cannot multiply matrices: out has 3 elements, expected at least 4 (M=2 K=3 N=2)",
    );
    expectInvalid(
      () => f(a, b, out, -1, 3, 2),
      "Cannot multiply matrices: M is -1, expected an integer >= 0",
    );
    expectInvalid(
      () => f(a, b, out, 2, 1.5, 2),
      "Cannot multiply matrices: K is 1.5, expected an integer >= 0",
    );
    expectInvalid(
      () => f(a, b, out, 2, 3, NaN),
      "Cannot multiply matrices: N is NaN, expected an integer >= 0",
    );
    expectInvalid(
      () => f(a, b, out, 2, 3, 2, "xn" as MatmulLayout),
      'Cannot multiply matrices: layout is "xn"',
    );
    expectInvalid(
      () => f(a, b, new Float64Array(4) as unknown as Float32Array, 2, 3, 2),
      "Cannot multiply matrices: out is not a Float32Array",
    );
    assert.deepEqual([...out], [7, 7, 7, 7]);
    const shared = new Float32Array(16);
    expectInvalid(
      () => f(shared.subarray(0, 6), b, shared.subarray(4, 8), 2, 3, 2),
      "Cannot multiply matrices: out overlaps an input",
    );
    f(shared.subarray(0, 6), b, shared.subarray(6, 10), 2, 3, 2); // adjacent, not overlapping: allowed
  }
});

Deno.test("NEURO_KERNELS=reference forces the reference path and gives the same bits", async () => {
  assert.equal(FORCE_REFERENCE, Deno.env.get("NEURO_KERNELS") === "reference");
  const code = `
    import { FORCE_REFERENCE, matmul } from ${
    JSON.stringify(new URL("../../kernels/matmul.ts", import.meta.url).href)
  };
    const a = new Float32Array(64 * 64).map((_, i) => ((Math.imul(i, 40503) >>> 0) % 1000) / 1000 - 0.5);
    const c = new Float32Array(64 * 64);
    matmul(a, a, c, 64, 64, 64, "nt");
    const u = new Uint32Array(c.buffer);
    let h = 0;
    for (const v of u) h = (Math.imul(h, 31) + v) >>> 0;
    console.log(FORCE_REFERENCE + " " + h);`;
  const run = async (mode: string) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", code],
      env: { NEURO_KERNELS: mode },
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(out.code, 0);
    return new TextDecoder().decode(out.stdout).trim().split(" ");
  };
  const [forced, h1] = await run("reference");
  const [fast, h2] = await run("wasm");
  assert.equal(forced, "true");
  assert.equal(fast, "false");
  assert.equal(h1, h2);
});
