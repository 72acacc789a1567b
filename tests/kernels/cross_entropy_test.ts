import assert from "node:assert/strict";
import {
  argmax,
  crossEntropyBackward,
  crossEntropyForward,
  crossEntropyForwardBackward,
} from "../../kernels/cross_entropy.ts";
import { errorCode, gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("cross-entropy ignores -100 labels, averages over labelled rows and matches finite differences", () => {
  const uniform = crossEntropyForward(
    new Float32Array([0, 0, 0, 0, 5, 7]),
    new Int32Array([1, -100, 0]),
    3,
    2,
  );
  assert.equal(uniform.labelled, 2);
  assert.equal(uniform.rowLosses[1], 0);
  assert.ok(Math.abs(uniform.rowLosses[0]! - Math.LN2) < 1e-7);
  assert.ok(Math.abs(uniform.loss - (uniform.rowLosses[0]! + uniform.rowLosses[2]!) / 2) < 1e-15);
  const next = rng(8);
  const N = 4, V = 5, labels = new Int32Array([2, -100, 0, 4]);
  const z = randomArray(next, N * V, 3);
  const dz = crossEntropyBackward(z, labels, N, V);
  assert.deepEqual(Array.from(dz.subarray(V, 2 * V)), [0, 0, 0, 0, 0]);
  gradcheck(
    "cross-entropy",
    8,
    [z],
    ([z]) => [new Float32Array([crossEntropyForward(z!, labels, N, V).loss])],
    ([c]) => {
      const g = crossEntropyBackward(z, labels, N, V);
      return [g.map((v) => v * c![0]!)];
    },
  );
});

Deno.test("cross-entropy rejects labels outside the vocabulary and batches without labels", () => {
  const z = new Float32Array(4);
  assert.equal(errorCode(() => crossEntropyForward(z, new Int32Array([2, 0]), 2, 2)), "invalid_tensor");
  assert.equal(errorCode(() => crossEntropyForward(z, new Int32Array([-100, -100]), 2, 2)), "invalid_tensor");
  assert.equal(errorCode(() => crossEntropyBackward(z, new Int32Array([-2, 0]), 2, 2)), "invalid_tensor");
});

Deno.test("argmax picks the lowest index among equal maxima and refuses NaN", () => {
  assert.deepEqual(Array.from(argmax(new Float32Array([1, 3, 3, -1, -2, -0.5]), 2, 3)), [1, 2]);
  assert.equal(errorCode(() => argmax(new Float32Array([1, NaN]), 1, 2)), "non_finite_tensor");
});

Deno.test("cross-entropy in one pass gives the same bits as forward and backward apart", () => {
  const next = rng(9);
  const N = 6, V = 7, labels = new Int32Array([0, 6, -100, 3, 3, 1]);
  const z = randomArray(next, N * V, 4);
  const both = crossEntropyForwardBackward(z, labels, N, V);
  const f = crossEntropyForward(z, labels, N, V);
  assert.equal(both.loss, f.loss);
  assert.deepEqual(both.rowLosses, f.rowLosses);
  assert.deepEqual(
    new Uint32Array(both.dz.buffer),
    new Uint32Array(crossEntropyBackward(z, labels, N, V).buffer),
  );
  assert.equal(
    errorCode(() => crossEntropyForwardBackward(z, new Int32Array(N).fill(-100), N, V)),
    "invalid_tensor",
  );
});
