import assert from "node:assert/strict";
import { rmsnormBackward, rmsnormForward, rmsnormOutput } from "../../kernels/rmsnorm.ts";
import { ProtocolError } from "../../core/errors.ts";
import { errorCode, gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("rmsnorm forward normalises [3,4] exactly and its backward matches finite differences", () => {
  const { y } = rmsnormForward(new Float32Array([3, 4]), new Float32Array([1, 2]), 1, 2, 0);
  const r = Math.fround(1 / Math.sqrt(12.5));
  assert.deepEqual(Array.from(y), [Math.fround(3 * r), Math.fround(2 * Math.fround(4 * r))]);
  const next = rng(2);
  const N = 3, C = 4;
  const x = randomArray(next, N * C), w = randomArray(next, C);
  gradcheck(
    "rmsnorm",
    2,
    [x, w],
    ([x, w]) => [rmsnormForward(x!, w!, N, C, 1e-5).y],
    ([dy]) => {
      const { cache } = rmsnormForward(x, w, N, C, 1e-5);
      const g = rmsnormBackward(dy!, w, cache, N, C);
      return [g.dx, g.dw];
    },
  );
});

Deno.test("rmsnorm refuses a row whose sum of squares overflows float32 with non_finite_tensor", () => {
  const x = new Float32Array([3e38, 1, 2, 3]);
  assert.equal(errorCode(() => rmsnormForward(x, new Float32Array([1, 1]), 2, 2, 1e-5)), "non_finite_tensor");
});

/** The definition as one plain loop per row (the sum of squares of each row alone, c ascending). */
function rmsnormPlain(x: Float32Array, w: Float32Array, N: number, C: number, eps: number): Float32Array {
  const fr = Math.fround, y = new Float32Array(N * C);
  for (let n = 0; n < N; n++) {
    let ss = 0;
    for (let c = 0; c < C; c++) ss = fr(ss + fr(x[n * C + c]! * x[n * C + c]!));
    const r = fr(1 / Math.sqrt(fr(fr(ss / C) + fr(eps))));
    for (let c = 0; c < C; c++) y[n * C + c] = fr(w[c]! * fr(x[n * C + c]! * r));
  }
  return y;
}

Deno.test("rmsnorm's rows summed four at a time give each row's own bits, with and without the cache", () => {
  const next = rng(17);
  for (const N of [1, 3, 4, 5, 8, 9, 64]) {
    const C = 37;
    // wide magnitudes: sums that round differently in any other order, tiny rows, a zero row
    const x = randomArray(next, N * C).map((v, i) => v * 10 ** ((i % 7) - 3));
    if (N > 2) x.fill(0, C, 2 * C);
    const w = randomArray(next, C);
    const y = rmsnormOutput(x, w, N, C, 1e-5);
    assert.deepEqual(
      new Uint32Array(y.buffer),
      new Uint32Array(rmsnormPlain(x, w, N, C, 1e-5).buffer),
      `N=${N}`,
    );
    assert.deepEqual(rmsnormForward(x, w, N, C, 1e-5).y, y);
  }
});

Deno.test("rmsnorm without the cache refuses the first row that overflows, and a non-finite output, leaving its input", () => {
  const C = 3, x = new Float32Array(6 * C).fill(1);
  x[5 * C] = 3e38; // row 5: the second group of four rows
  x[4 * C + 1] = 2e38; // row 4 too: the first one is named
  const before = x.slice();
  const err = (() => {
    try {
      rmsnormOutput(x, new Float32Array(C).fill(1), 6, C, 1e-5);
    } catch (e) {
      return e;
    }
  })();
  assert.ok(err instanceof ProtocolError && err.code === "non_finite_tensor", String(err));
  assert.match(err.message, /^Cannot normalise row 4: /);
  assert.deepEqual(x, before);
  // a finite input whose output overflows (a huge weight): the assertFinite error, first element named
  const z = new Float32Array([1, 2, 3, 4]);
  assert.equal(
    errorCode(() => rmsnormOutput(z, new Float32Array([1, 3e38]), 2, 2, 1e-5)),
    "non_finite_tensor",
  );
  assert.throws(
    () => rmsnormOutput(z, new Float32Array([1, 3e38]), 2, 2, 1e-5),
    /rmsnorm output: element 1 is Infinity/,
  );
});
