import assert from "node:assert/strict";
import { attentionBackward, attentionForward } from "../../kernels/attention.ts";
import { gradcheck, randomArray, rng } from "./_gradcheck.ts";

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
