import assert from "node:assert/strict";
import { attentionBackward, attentionForward, attentionForwardReference } from "../../kernels/attention.ts";
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

Deno.test("attention sums each query's values up to its last key: the reference's bits, and a value that is not finite gets the reference's error", () => {
  const next = rng(12);
  // Tq = Tk (a prompt) and Tq < Tk (a chunk after cached positions), odd sizes, a head group of three
  const sizes: [number, number][] = [[7, 7], [3, 9], [1, 5], [64, 64]];
  for (const [Tq, Tk] of sizes) {
    const H = 3, KVH = 1, D = 5, dims = { B: 1, Tq, Tk, H, KVH, D };
    const q = randomArray(next, Tq * H * D, 4), k = randomArray(next, Tk * KVH * D, 4);
    const v = randomArray(next, Tk * KVH * D).map((
      x,
      i,
    ) => (i % 11 === 0 ? -0 : i % 13 === 0 ? x * 1e30 : x));
    const want = attentionForwardReference(q, k, v, dims);
    const got = attentionForward(q, k, v, dims);
    assert.deepEqual(new Uint32Array(got.out.buffer), new Uint32Array(want.out.buffer), `${Tq}x${Tk}`);
    assert.deepEqual(new Uint32Array(got.cache.p.buffer), new Uint32Array(want.cache.p.buffer));
    // a value that is not finite at the last key, which only the last query reaches unmasked: the reference's
    // matmul makes the earlier queries' masked +0·Infinity NaN, so its error names an earlier row
    for (const bad of [Infinity, NaN]) {
      const vb = v.slice();
      vb[(Tk - 1) * KVH * D + 2] = bad;
      const before = vb.slice();
      const message = (f: () => unknown) => {
        try {
          f();
        } catch (e) {
          return `${(e as { code?: string }).code}: ${(e as Error).message}`;
        }
        return "no error";
      };
      const expected = message(() => attentionForwardReference(q, k, vb, dims));
      assert.match(expected, /^non_finite_tensor: /);
      assert.equal(message(() => attentionForward(q, k, vb, dims)), expected, `${Tq}x${Tk} ${bad}`);
      assert.deepEqual(vb, before);
    }
  }
});
