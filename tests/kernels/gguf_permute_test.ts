import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { permuteRows, unpermuteRows } from "../../kernels/gguf_permute.ts";

/** A small seeded generator (mulberry32) so failures can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

Deno.test("the converter's permutation interleaves each head's two halves row by row", () => {
  const rows = (n: number) => Float32Array.from({ length: n }, (_, i) => i);
  assert.deepEqual([...permuteRows(rows(4), 1, 1)], [0, 2, 1, 3]);
  assert.deepEqual([...permuteRows(rows(8), 2, 1)], [0, 2, 1, 3, 4, 6, 5, 7]);
  assert.deepEqual([...permuteRows(rows(6), 1, 1)], [0, 3, 1, 4, 2, 5]);
  // Whole rows move: two columns per row.
  assert.deepEqual([...permuteRows(rows(8), 1, 2)], [0, 1, 4, 5, 2, 3, 6, 7]);
  assert.deepEqual([...unpermuteRows(Float32Array.from([0, 3, 1, 4, 2, 5]), 1, 1)], [0, 1, 2, 3, 4, 5]);
});

Deno.test("unpermute undoes permute and permute undoes unpermute on random data", () => {
  const seed = 20261129;
  const next = random(seed);
  for (const [heads, d, cols] of [[9, 64, 5], [3, 64, 7], [1, 2, 1], [4, 6, 3]] as const) {
    const w = Float32Array.from({ length: heads * d * cols }, next);
    assert.deepEqual(unpermuteRows(permuteRows(w, heads, cols), heads, cols), w, `seed ${seed}`);
    assert.deepEqual(permuteRows(unpermuteRows(w, heads, cols), heads, cols), w, `seed ${seed}`);
    if (d > 2) {
      assert.notDeepEqual(permuteRows(w, heads, cols), w, `seed ${seed}: the permutation moves rows`);
    }
  }
});

/** Rotate-half RoPE (Hugging Face): element i pairs with i + D/2. */
function ropeHalf(x: number[], pos: number, base: number): number[] {
  const d = x.length, h = d / 2, out = x.slice();
  for (let i = 0; i < h; i++) {
    const a = pos * base ** (-2 * i / d), c = Math.cos(a), s = Math.sin(a);
    out[i] = x[i]! * c - x[i + h]! * s;
    out[i + h] = x[i + h]! * c + x[i]! * s;
  }
  return out;
}

/** Interleaved RoPE (llama.cpp's normal mode): element 2i pairs with 2i + 1. */
function ropeInterleaved(x: number[], pos: number, base: number): number[] {
  const d = x.length, out = x.slice();
  for (let i = 0; i < d / 2; i++) {
    const a = pos * base ** (-2 * i / d), c = Math.cos(a), s = Math.sin(a);
    out[2 * i] = x[2 * i]! * c - x[2 * i + 1]! * s;
    out[2 * i + 1] = x[2 * i]! * s + x[2 * i + 1]! * c;
  }
  return out;
}

Deno.test("llama.cpp's interleaved RoPE on permuted rows equals rotate-half RoPE on unpermuted rows", () => {
  const seed = 7;
  const next = random(seed);
  const heads = 3, d = 8, cols = 5;
  const w = Float32Array.from({ length: heads * d * cols }, next); // Hugging Face q_proj: [heads·D, cols]
  const x = Array.from({ length: cols }, next);
  const project = (m: Float32Array) =>
    Array.from({ length: heads * d }, (_, r) => x.reduce((acc, xi, k) => acc + m[r * cols + k]! * xi, 0));
  const qHf = project(w);
  const qGguf = project(permuteRows(w, heads, cols));
  for (const pos of [0, 1, 5, 37]) {
    const hf: number[] = [];
    const gg: number[] = [];
    for (let h = 0; h < heads; h++) {
      hf.push(...ropeHalf(qHf.slice(h * d, (h + 1) * d), pos, 100000));
      gg.push(...ropeInterleaved(qGguf.slice(h * d, (h + 1) * d), pos, 100000));
    }
    const back = unpermuteRows(Float32Array.from(gg), heads, 1);
    back.forEach((v, i) =>
      assert.ok(Math.abs(v - Math.fround(hf[i]!)) < 1e-6, `seed ${seed} pos ${pos} row ${i}`)
    );
  }
});

Deno.test("rows that do not split into heads of even width are refused", () => {
  assert.throws(() => unpermuteRows(new Float32Array(6), 2, 1), (e: unknown) => {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.code, "invalid_tensor");
    assert.equal(
      e.message,
      "Cannot unpermute rows: 6 values in rows of 1 do not split into 2 heads of even width",
    );
    return true;
  });
});
