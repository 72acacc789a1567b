import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { linearBackward, linearForward } from "../../kernels/linear.ts";
import { matmulFinite, matmulReference } from "../../kernels/matmul.ts";
import { COPY_SPLIT_MIN, COPY_TASK_ELEMENTS, copyFloats } from "../../kernels/parallel_copy.ts";
import { sharedBytes, taskPoolDisabled, taskWorkers } from "../../kernels/task_pool.ts";
import { setKernelThreads } from "../../kernels/threads.ts";
import { rng, uniform } from "./_matmul_util.ts";

function shared(n: number): Float32Array {
  return new Float32Array(sharedBytes(4 * n).buffer);
}

function bits(x: Float32Array): Uint32Array {
  return new Uint32Array(x.buffer, x.byteOffset, x.length);
}

Deno.test("copyFloats: every bit copied and non-finite values found, on 1-3 threads, shared and plain", () => {
  const n = Math.max(COPY_SPLIT_MIN, 3 * COPY_TASK_ELEMENTS) + 17; // split: several tasks, a ragged last one
  const next = rng(9);
  const src = shared(n + 5).subarray(5); // a view with an offset
  src.set(uniform(next, n));
  src[0] = -0, src[1] = 1e-45, src[2] = -3.4028234663852886e38; // -0, the smallest subnormal, the largest
  for (const threads of [1, 2, 3]) {
    const cases: [number, number][] = [[-1, 0], [0, NaN], [n - 1, Infinity], [COPY_TASK_ELEMENTS, -Infinity]];
    for (const [where, value] of cases) {
      const input = shared(n);
      input.set(src);
      if (where >= 0) input[where] = value;
      const dst = shared(n + 3); // longer than the copy: the tail stays +0
      dst.fill(7);
      const finite = copyFloats(input, dst, true, threads);
      assert.equal(finite, where < 0, `threads ${threads}, non-finite at ${where}`);
      assert.deepEqual(bits(dst.subarray(0, n)), bits(input), `threads ${threads}`);
      assert.deepEqual([...dst.subarray(n)], [7, 7, 7]);
      const plain = new Float32Array(n);
      assert.equal(copyFloats(input, plain, true, threads), where < 0, "plain destination");
      assert.deepEqual(bits(plain), bits(input));
      assert.equal(copyFloats(input, shared(n), false, threads), true, "unchecked");
    }
  }
  if (taskPoolDisabled() === null) assert.ok(taskWorkers() >= 1);
  assert.throws(() => copyFloats(shared(COPY_SPLIT_MIN), shared(10), true, 2), RangeError);
});

Deno.test("matmulFinite gives matmul's bits and says whether every output is finite, on 1-3 threads", () => {
  const next = rng(3);
  const M = 70, K = 33, N = Math.ceil(COPY_SPLIT_MIN / M) + 3; // an output above the split threshold
  const a = uniform(next, M * K), b = uniform(next, K * N);
  const want = new Float32Array(M * N);
  matmulReference(a, b, want, M, K, N, "nn");
  const big = Float32Array.from(a);
  big[5] = Infinity; // row 0 of the output is infinite or NaN
  const wantBig = new Float32Array(M * N);
  matmulReference(big, b, wantBig, M, K, N, "nn");
  try {
    for (const threads of [1, 2, 3]) {
      setKernelThreads(threads);
      const out = shared(M * N);
      assert.equal(matmulFinite(a, b, out, M, K, N, "nn"), true);
      assert.deepEqual(bits(out), bits(want), `threads ${threads}`);
      const outBig = shared(M * N);
      assert.equal(matmulFinite(big, b, outBig, M, K, N, "nn"), false);
      assert.deepEqual(bits(outBig), bits(wantBig), `threads ${threads}, overflowing`);
      const small = new Float32Array(4);
      assert.equal(matmulFinite(new Float32Array([1, NaN]), new Float32Array([1, 2]), small, 2, 1, 2), false);
    }
  } finally {
    setKernelThreads(1);
  }
});

Deno.test("linear layers still refuse a non-finite output, weight gradient or input gradient by name", () => {
  const N = 64, I = 96, O = 1100;
  const next = rng(4);
  const x = uniform(next, N * I), w = uniform(next, O * I), dy = uniform(next, N * O);
  try {
    for (const threads of [1, 2]) {
      setKernelThreads(threads);
      const wBad = Float32Array.from(w);
      wBad[3] = Infinity;
      assert.throws(
        () => linearForward(x, wBad, N, I, O),
        (e: unknown) =>
          e instanceof ProtocolError && e.code === "non_finite_tensor" &&
          /^Cannot use linear output: element 0 is/.test(e.message),
      );
      const dyBad = Float32Array.from(dy);
      dyBad[O + 2] = NaN; // position 1, output 2: row 2 of dW and row 1 of dx
      const dw = shared(O * I);
      assert.throws(
        () => linearBackward(dyBad, x, w, N, I, O, dw),
        (e: unknown) =>
          e instanceof ProtocolError && e.code === "non_finite_tensor" &&
          /^Cannot use linear input gradient: element 96 is NaN$/.test(e.message),
      );
      const xBad = Float32Array.from(x);
      xBad[I + 1] = NaN; // position 1, input 1: dW column 1 of every row
      assert.throws(
        () => linearBackward(dy, xBad, w, N, I, O, shared(O * I)),
        (e: unknown) =>
          e instanceof ProtocolError && e.code === "non_finite_tensor" &&
          /^Cannot use linear weight gradient: element 1 is NaN$/.test(e.message),
      );
    }
  } finally {
    setKernelThreads(1);
  }
});
