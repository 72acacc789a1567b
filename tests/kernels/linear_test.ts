import assert from "node:assert/strict";
import {
  linearBackward,
  linearBackwardByRows,
  linearForward,
  linearForwardByRows,
} from "../../kernels/linear.ts";
import { matmulReference } from "../../kernels/matmul.ts";
import { kernelThreads, setKernelThreads } from "../../kernels/threads.ts";
import { wasmMatmulThreadsDisabled, wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";
import { gradcheck, randomArray, rng } from "./_gradcheck.ts";
import {
  adversarial,
  describeDifference,
  firstBitDifference,
  rng as rng32,
  uniform,
} from "./_matmul_util.ts";

Deno.test("linear backward matches finite differences", () => {
  const next = rng(3);
  const N = 3, I = 4, O = 2;
  const x = randomArray(next, N * I), w = randomArray(next, O * I);
  gradcheck("linear", 3, [x, w], ([x, w]) => [linearForward(x!, w!, N, I, O)], ([dy]) => {
    const g = linearBackward(dy!, x, w, N, I, O);
    return [g.dx, g.dw];
  });
});

Deno.test("linear output is the reference's bits, and an output that overflows is non_finite_tensor naming its first element", () => {
  const next = rng(29);
  // large enough for the WebAssembly path (its finiteness check is one SIMD pass over C), and small
  for (const [N, I, O] of [[64, 96, 37], [5, 33, 97], [2, 3, 4]] as const) {
    const x = randomArray(next, N * I), w = randomArray(next, O * I);
    const want = new Float32Array(N * O);
    matmulReference(x, w, want, N, I, O, "nt");
    assert.deepEqual(new Uint32Array(linearForward(x, w, N, I, O).buffer), new Uint32Array(want.buffer));
    // w = 2·I on its first min(I, O) rows, x row r with 3e38 at column j: only y[r, j] overflows (to +Infinity)
    const eye = new Float32Array(O * I);
    for (let j = 0; j < Math.min(I, O); j++) eye[j * I + j] = 2;
    const at: [number, number][] = [[0, 0], [N - 1, Math.min(I, O) - 1], [N >> 1, 1], [1, 2]];
    for (const [r, j] of at) {
      const xs = new Float32Array(N * I).fill(0.5);
      xs[r * I + j] = 3e38;
      if (r > 0) xs[(r - 1) * I + j] = -3e38; // an earlier row overflows too, to -Infinity: it is the one named
      const before = xs.slice(), wBefore = eye.slice();
      const first = r > 0 ? (r - 1) * O + j : j;
      assert.throws(
        () => linearForward(xs, eye, N, I, O),
        (e: Error & { code?: string }) =>
          e.code === "non_finite_tensor" &&
          e.message === `Cannot use linear output: element ${first} is ${r > 0 ? -Infinity : Infinity}`,
        `${N}x${I}x${O} at ${r},${j}`,
      );
      assert.deepEqual(xs, before);
      assert.deepEqual(eye, wBefore);
    }
  }
});

function sameBits(got: Float32Array, want: Float32Array, what: string): void {
  const d = firstBitDifference(got, want);
  assert.equal(d, -1, d < 0 ? "" : `${what}: ${describeDifference(got, want, d)}`);
}

/** The thrown error's class and message, or "no error". */
function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return `${(e as Error).name} ${(e as { code?: string }).code ?? ""}: ${(e as Error).message}`;
  }
  return "no error";
}

Deno.test("linear layers by slices of rows give the whole layer's bits on 1, 2 and 3 threads, slices that divide O or not", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, 120_000), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng32(977), before = kernelThreads();
  try {
    // the head's shape scaled down (N positions, I features, a vocabulary of O rows), and one below the
    // WebAssembly path's size (the reference loops' continuation)
    for (
      const [N, I, O, rows] of [[64, 96, 1000, 256], [37, 64, 301, 100], [5, 33, 97, 12], [
        3,
        4,
        9,
        4,
      ]] as const
    ) {
      for (const values of [uniform, adversarial]) {
        const x = values(next, N * I), w = values(next, O * I), dy = values(next, N * O);
        for (const threads of [1, 2, 3]) {
          setKernelThreads(threads);
          const what = `${values.name} ${N}x${I}x${O} by ${rows}, ${threads} threads`;
          const y = errorOf(() => linearForward(x, w, N, I, O));
          if (y === "no error") {
            sameBits(
              linearForwardByRows(x, w, N, I, O, rows),
              linearForward(x, w, N, I, O),
              `forward ${what}`,
            );
          } else assert.equal(errorOf(() => linearForwardByRows(x, w, N, I, O, rows)), y, what);
          const back = errorOf(() => linearBackward(dy, x, w, N, I, O));
          if (back === "no error") {
            const want = linearBackward(dy, x, w, N, I, O);
            const into = new Float32Array(O * I);
            const got = linearBackwardByRows(dy, x, w, N, I, O, rows, into);
            sameBits(got.dx, want.dx, `dx ${what}`);
            sameBits(got.dw, want.dw, `dw ${what}`);
            assert.equal(got.dw, into, "dW is written where it was asked to be");
          } else assert.equal(errorOf(() => linearBackwardByRows(dy, x, w, N, I, O, rows)), back, what);
        }
      }
    }
  } finally {
    setKernelThreads(before);
  }
});

Deno.test("linear layers by slices of rows raise the whole layer's errors: the first non-finite element, bad sizes, a short dW", () => {
  const next = rng(31);
  const N = 6, I = 40, O = 50, rows = 16;
  const x = randomArray(next, N * I), w = randomArray(next, O * I), dy = randomArray(next, N * O);
  // one overflow in a late slice's column of an early row, one in an early slice's column of a later row:
  // the element named is the first in row-major order, as the whole layer names it
  const xs = x.slice(), ws = w.slice();
  ws.fill(0, 45 * I, 46 * I);
  ws[45 * I] = 2;
  ws.fill(0, 3 * I, 4 * I);
  ws[3 * I + 1] = 2;
  xs[1 * I + 0] = 3e38; // y[1, 45] = +Infinity (slice 2)
  xs[2 * I + 1] = -3e38; // y[2, 3] = -Infinity (slice 0)
  const forward = errorOf(() => linearForward(xs, ws, N, I, O));
  assert.equal(forward, "ProtocolError non_finite_tensor: Cannot use linear output: element 95 is Infinity");
  assert.equal(errorOf(() => linearForwardByRows(xs, ws, N, I, O, rows)), forward);
  // dx overflows only when the sum over every slice is taken; dW in one row of a late slice
  const dys = dy.slice();
  dys[4 * O + 49] = 3e38;
  const big = w.slice();
  big[49 * I + 7] = 3e38;
  const backward = errorOf(() => linearBackward(dys, x, big, N, I, O));
  assert.match(
    backward,
    /^ProtocolError non_finite_tensor: Cannot use linear input gradient: element 167 is/,
  );
  assert.equal(errorOf(() => linearBackwardByRows(dys, x, big, N, I, O, rows)), backward);
  const xw = x.slice();
  xw[4 * I + 7] = 3e38; // dW[49, 7] = dy[4, 49]·x[4, 7] + … overflows; dx stays finite
  const dw = errorOf(() => linearBackward(dys, xw, w, N, I, O));
  assert.match(dw, /^ProtocolError non_finite_tensor: Cannot use linear weight gradient: element/);
  assert.equal(errorOf(() => linearBackwardByRows(dys, xw, w, N, I, O, rows)), dw);
  // sizes: the whole product's message, and nothing written
  const short = w.subarray(0, O * I - 1);
  assert.equal(
    errorOf(() => linearForwardByRows(x, short, N, I, O, rows)),
    errorOf(() => linearForward(x, short, N, I, O)),
  );
  const into = new Float32Array(O * I).fill(7);
  assert.equal(
    errorOf(() => linearBackwardByRows(dy, x, short, N, I, O, rows, into)),
    errorOf(() => linearBackward(dy, x, short, N, I, O, into)),
  );
  assert.ok(into.every((v) => v === 7));
  assert.equal(
    errorOf(() => linearBackwardByRows(dy, x, w, N, I, O, rows, new Float32Array(3))),
    "RangeError : Cannot write the weight gradient: it has 3 elements, expected 2000",
  );
});
