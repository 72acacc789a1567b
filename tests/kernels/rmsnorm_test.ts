import assert from "node:assert/strict";
import { rmsnormBackward, rmsnormForward } from "../../kernels/rmsnorm.ts";
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
