import assert from "node:assert/strict";
import { linearForward } from "../../kernels/linear.ts";
import { addBackward, addForward } from "../../kernels/residual.ts";
import { rmsnormForward } from "../../kernels/rmsnorm.ts";
import { errorCode } from "./_gradcheck.ts";

Deno.test("ops refuse to produce non-finite values with non_finite_tensor", () => {
  const big = new Float32Array([3e38, 3e38]);
  assert.equal(errorCode(() => addForward(big, big)), "non_finite_tensor");
  assert.equal(errorCode(() => linearForward(big, new Float32Array([10, 10]), 1, 2, 1)), "non_finite_tensor");
  assert.equal(
    errorCode(() => rmsnormForward(new Float32Array([NaN, 1]), new Float32Array(2), 1, 2, 0)),
    "non_finite_tensor",
  );
});

Deno.test("residual add rounds each sum to float32 and passes the gradient to both addends", () => {
  const y = addForward(new Float32Array([1, 2 ** -30]), new Float32Array([2 ** -24, 1]));
  assert.deepEqual(Array.from(y), [1, 1]);
  const dy = new Float32Array([3, 4]);
  const g = addBackward(dy);
  assert.equal(g.da, dy);
  assert.equal(g.db, dy);
});
