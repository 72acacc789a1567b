import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { assertFinite, bitEqual, expectShape, sizeOf, tensor, zeros } from "../../kernels/tensor.ts";

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProtocolError) return e.code;
    throw e;
  }
  return "no error";
}

Deno.test("tensor sizes are products of positive integer dimensions", () => {
  assert.equal(sizeOf([2, 3, 4]), 24);
  assert.equal(sizeOf([]), 1);
  assert.equal(code(() => sizeOf([2, 0])), "invalid_tensor");
  assert.equal(code(() => sizeOf([1.5])), "invalid_tensor");
  assert.equal(code(() => tensor([2], [1, 2, 3])), "invalid_tensor");
  assert.deepEqual(Array.from(zeros([2, 2]).data), [0, 0, 0, 0]);
});

Deno.test("tensor finiteness check names the element and uses non_finite_tensor", () => {
  assertFinite(new Float32Array([1, -0, 3e38]), "x");
  assert.equal(code(() => assertFinite(new Float32Array([1, NaN]), "x")), "non_finite_tensor");
  assert.throws(() => assertFinite(new Float32Array([0, 0, -Infinity]), "x"), /element 2 is -Infinity/);
});

Deno.test("tensor bit equality distinguishes -0 from +0 and shapes", () => {
  assert.ok(bitEqual(tensor([2], [1, 0]), tensor([2], [1, 0])));
  assert.ok(!bitEqual(tensor([2], [1, 0]), tensor([2], [1, -0])));
  assert.ok(!bitEqual(tensor([2], [1, 0]), tensor([1, 2], [1, 0])));
  assert.equal(code(() => expectShape(tensor([2], [1, 0]), [1, 2], "x")), "invalid_tensor");
});
