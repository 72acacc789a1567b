import assert from "node:assert/strict";
import { attentionBackward, attentionForward } from "../../kernels/attention.ts";
import { argmax, crossEntropyBackward, crossEntropyForward } from "../../kernels/cross_entropy.ts";
import { embeddingBackward, embeddingForward } from "../../kernels/embedding.ts";
import { linearBackward, linearForward } from "../../kernels/linear.ts";
import { mlpBackward, mlpForward } from "../../kernels/mlp.ts";
import { addForward } from "../../kernels/residual.ts";
import { rmsnormBackward, rmsnormForward } from "../../kernels/rmsnorm.ts";
import { rotaryBackward, rotaryForward, rotaryTables } from "../../kernels/rotary.ts";
import { errorCode, gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("embedding backward matches finite differences and forward copies rows", () => {
  const next = rng(1);
  const V = 5, C = 3, ids = new Int32Array([4, 0, 4, 2]);
  const w = randomArray(next, V * C);
  assert.deepEqual(Array.from(embeddingForward(w, ids, V, C).subarray(0, 3)), Array.from(w.subarray(12, 15)));
  gradcheck("embedding", 1, [w], ([w]) => [embeddingForward(w!, ids, V, C)], ([dy]) => [
    embeddingBackward(dy!, ids, V, C),
  ]);
});

Deno.test("embedding rejects ids outside the vocabulary with invalid_tensor", () => {
  const w = new Float32Array(6);
  assert.equal(errorCode(() => embeddingForward(w, new Int32Array([3]), 3, 2)), "invalid_tensor");
  assert.equal(errorCode(() => embeddingForward(w, new Int32Array([-1]), 3, 2)), "invalid_tensor");
  assert.equal(errorCode(() => embeddingBackward(w, new Int32Array([3]), 3, 2)), "invalid_tensor");
});

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

Deno.test("linear backward matches finite differences", () => {
  const next = rng(3);
  const N = 3, I = 4, O = 2;
  const x = randomArray(next, N * I), w = randomArray(next, O * I);
  gradcheck("linear", 3, [x, w], ([x, w]) => [linearForward(x!, w!, N, I, O)], ([dy]) => {
    const g = linearBackward(dy!, x, w, N, I, O);
    return [g.dx, g.dw];
  });
});

Deno.test("rotary keeps position 0 unchanged and its backward matches finite differences", () => {
  const B = 2, T = 3, heads = 2, D = 4;
  const tables = rotaryTables(T, D, 10000);
  const next = rng(4);
  const x = randomArray(next, B * T * heads * D);
  const y = rotaryForward(x, tables, B, T, heads, D);
  assert.deepEqual(Array.from(y.subarray(0, heads * D)), Array.from(x.subarray(0, heads * D)));
  assert.deepEqual(Array.from(y.subarray(T * heads * D, T * heads * D + 8)), Array.from(x.subarray(24, 32)));
  gradcheck("rotary", 4, [x], ([x]) => [rotaryForward(x!, tables, B, T, heads, D)], ([dy]) => [
    rotaryBackward(dy!, tables, B, T, heads, D),
  ]);
  assert.equal(errorCode(() => rotaryForward(x, tables, B, T, heads, D, 1)), "invalid_tensor");
});

Deno.test("attention backward matches finite differences with grouped heads", () => {
  const dims = { B: 2, Tq: 3, Tk: 3, H: 4, KVH: 2, D: 2 };
  const next = rng(5);
  const q = randomArray(next, 2 * 3 * 4 * 2),
    k = randomArray(next, 2 * 3 * 2 * 2),
    v = randomArray(next, 12 * 2);
  gradcheck("attention", 5, [q, k, v], ([q, k, v]) => [attentionForward(q!, k!, v!, dims).out], ([dy]) => {
    const { cache } = attentionForward(q, k, v, dims);
    const g = attentionBackward(dy!, q, k, v, cache, dims);
    return [g.dq, g.dk, g.dv];
  });
});

Deno.test("attention is causal and a query with fewer keys gives the same bits as with the whole row", () => {
  const T = 5, H = 2, KVH = 1, D = 4;
  const next = rng(6);
  const q = randomArray(next, T * H * D),
    k = randomArray(next, T * KVH * D),
    v = randomArray(next, T * KVH * D);
  const full = attentionForward(q, k, v, { B: 1, Tq: T, Tk: T, H, KVH, D }).out;
  for (let i = 0; i < T; i++) {
    const one = attentionForward(
      q.subarray(i * H * D, (i + 1) * H * D),
      k.subarray(0, (i + 1) * KVH * D),
      v.subarray(0, (i + 1) * KVH * D),
      { B: 1, Tq: 1, Tk: i + 1, H, KVH, D },
    ).out;
    assert.deepEqual(
      new Uint32Array(one.slice().buffer),
      new Uint32Array(full.slice(i * H * D, (i + 1) * H * D).buffer),
    );
  }
  const k2 = k.slice();
  k2[(T - 1) * D] = k2[(T - 1) * D]! + 1;
  const changed = attentionForward(q, k2, v, { B: 1, Tq: T, Tk: T, H, KVH, D }).out;
  assert.deepEqual(changed.subarray(0, (T - 1) * H * D), full.subarray(0, (T - 1) * H * D));
  assert.notDeepEqual(changed.subarray((T - 1) * H * D), full.subarray((T - 1) * H * D));
});

Deno.test("mlp backward matches finite differences", () => {
  const next = rng(7);
  const N = 2, C = 3, M = 4;
  const x = randomArray(next, N * C), gate = randomArray(next, M * C), up = randomArray(next, M * C);
  const down = randomArray(next, C * M);
  gradcheck(
    "mlp",
    7,
    [x, gate, up, down],
    ([x, gate, up, down]) => [mlpForward(x!, { gate: gate!, up: up!, down: down! }, N, C, M).y],
    ([dy]) => {
      const w = { gate, up, down };
      const { cache } = mlpForward(x, w, N, C, M);
      const g = mlpBackward(dy!, x, w, cache, N, C, M);
      return [g.dx, g.dGate, g.dUp, g.dDown];
    },
  );
});

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

Deno.test("ops refuse to produce non-finite values with non_finite_tensor", () => {
  const big = new Float32Array([3e38, 3e38]);
  assert.equal(errorCode(() => addForward(big, big)), "non_finite_tensor");
  assert.equal(errorCode(() => linearForward(big, new Float32Array([10, 10]), 1, 2, 1)), "non_finite_tensor");
  assert.equal(
    errorCode(() => rmsnormForward(new Float32Array([NaN, 1]), new Float32Array(2), 1, 2, 0)),
    "non_finite_tensor",
  );
});
