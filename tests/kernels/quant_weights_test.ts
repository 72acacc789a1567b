import assert from "node:assert/strict";
import { decode } from "../../kernels/gguf_dequant.ts";
import { GGML_TYPE } from "../../kernels/gguf_types.ts";
import { matmulReference } from "../../kernels/matmul.ts";
import { packedQuantBytes, packQuant, quantBlocks } from "../../kernels/quant_weights.ts";
import { makeResident, quantB, wasmMatmul } from "../../kernels/wasm/matmul_wasm.ts";
import { adversarial, firstBitDifference, rng } from "./_matmul_util.ts";

/** GGUF blocks of `type` (Q4_1 or Q8_0) with random codes and half-precision scales, dequantised as imported. */
function gguf(type: number, N: number, K: number, seed: number): Float32Array {
  const int = rng(seed),
    next = () => int() / 2 ** 32,
    blocks = (N * K) / 32,
    size = type === GGML_TYPE.Q4_1 ? 20 : 34;
  const bytes = new Uint8Array(blocks * size), view = new DataView(bytes.buffer);
  for (let b = 0; b < blocks; b++) {
    const at = b * size;
    view.setFloat16(at, 0.001 + next() * 0.1, true); // d > 0
    if (type === GGML_TYPE.Q4_1) view.setFloat16(at + 2, (next() - 0.7) * 2, true); // m
    for (let i = type === GGML_TYPE.Q4_1 ? 4 : 2; i < size; i++) bytes[i + at] = Math.floor(next() * 256);
    // As a quantiser writes them: each block reaches its range (Q4_1 codes 0 and 15, Q8_0 code ±127).
    if (type === GGML_TYPE.Q4_1) bytes[at + 4] = 0xf0;
    else bytes[at + 2] = b % 2 ? 127 : 129;
    if (b % 7 === 3) bytes.fill(type === GGML_TYPE.Q4_1 ? 0x00 : 0x80, at + size - 4, at + size); // extremes
  }
  return decode(type, bytes, N * K);
}

/** The value `quantBlocks` promises: fround(fround(q·d) + m), bit for bit, for every element. */
function rebuilt(q: NonNullable<ReturnType<typeof quantBlocks>>, n: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => {
    const b = Math.floor(i / 32);
    return Math.fround(Math.fround(q.codes[i]! * q.d[b]!) + q.m[b]!);
  });
}

Deno.test("quantBlocks finds exact codes for Q4_1 and Q8_0 imports, and refuses anything else", () => {
  for (const type of [GGML_TYPE.Q4_1, GGML_TYPE.Q8_0]) {
    const w = gguf(type, 8, 96, type);
    const q = quantBlocks(w, 8, 96);
    assert.ok(q !== null, `type ${type}`);
    assert.equal(firstBitDifference(rebuilt(q, w.length), w), -1, `type ${type}`);
    if (type === GGML_TYPE.Q8_0) assert.ok(q.m.every((m) => Object.is(m, -0)));
    // One value one ulp off, a NaN, or a shape the kernel cannot take: no copy.
    const off = w.slice();
    off[200] = new Float32Array(new Int32Array([new Int32Array(off.buffer)[200]! + 1]).buffer)[0]!;
    assert.equal(quantBlocks(off, 8, 96), null);
    const nan = w.slice();
    nan[5] = NaN;
    assert.equal(quantBlocks(nan, 8, 96), null);
    assert.equal(quantBlocks(w, 8, 95), null); // K not a multiple of 32
    assert.equal(quantBlocks(w.subarray(0, 6 * 128), 6, 128), null); // N not a multiple of 4
  }
  // Blocks of the two formats in one matrix, and a block of one repeated value, are each exact.
  const mixed = new Float32Array(4 * 64);
  mixed.set(gguf(GGML_TYPE.Q4_1, 4, 32, 5).subarray(0, 128));
  mixed.set(gguf(GGML_TYPE.Q8_0, 4, 32, 6).subarray(0, 128), 128);
  mixed.fill(0.375, 32, 64);
  const q = quantBlocks(mixed, 4, 64)!;
  assert.equal(firstBitDifference(rebuilt(q, mixed.length), mixed), -1);
  // Trained (unquantised) weights are refused.
  assert.equal(quantBlocks(adversarial(rng(3), 4 * 64), 4, 64), null);
});

Deno.test("packQuant lays out quads of four rows: d and m of the four, then the codes k by k", () => {
  const w = gguf(GGML_TYPE.Q4_1, 8, 64, 11), q = quantBlocks(w, 8, 64)!;
  const out = new Uint8Array(packedQuantBytes(8, 64));
  assert.equal(out.length, 2 * 2 * 160);
  packQuant(q, 8, 64, out);
  const view = new DataView(out.buffer);
  // Quad 1 (rows 4..7), block 1 (k 32..63) starts at (1·2 + 1)·160.
  const at = 3 * 160;
  for (let r = 0; r < 4; r++) {
    assert.equal(view.getFloat32(at + 4 * r, true), q.d[(4 + r) * 2 + 1]);
    assert.equal(view.getFloat32(at + 16 + 4 * r, true), q.m[(4 + r) * 2 + 1]);
    for (const k of [0, 5, 31]) assert.equal(out[at + 32 + 4 * k + r], q.codes[(4 + r) * 64 + 32 + k]);
  }
});

Deno.test("a one-row matmul on exact block-quantised weights gives the float32 matmul's bits on 1, 2 and 3 threads", () => {
  const next = rng(17);
  // N: quads of three and single ones, thread ranges of 12 and of 96; K: one block, several, the model's.
  for (
    const [N, K, type] of [[4, 32, 3], [52, 64, 3], [1540, 576, 3], [388, 1536, 8], [200, 96, 8]] as const
  ) {
    const w = gguf(type, N, K, N + K);
    const parts = { c: { w: { shape: [N, K], data: w.slice() } } };
    makeResident(parts, { quantized: true });
    const view = parts.c.w.data;
    assert.notEqual(quantB(view, K, N), null, `${N}x${K}`);
    assert.equal(quantB(view, K + 32, N), null); // another shape reads the float32 values
    for (const x of [adversarial(next, K), Float32Array.from({ length: K }, (_, i) => (i % 3) - 1)]) {
      const want = new Float32Array(N);
      matmulReference(x, w, want, 1, K, N, "nt");
      for (const threads of [1, 2, 3]) {
        const got = new Float32Array(N);
        wasmMatmul(x, view, got, 1, K, N, "nt", threads);
        assert.equal(firstBitDifference(got, want), -1, `${N}x${K} type ${type} ${threads} threads`);
      }
    }
    assert.deepEqual(view, w); // read, never written
  }
  // Without the option (the default) no copy is made.
  const plain = { c: { w: { shape: [4, 32], data: gguf(GGML_TYPE.Q4_1, 4, 32, 1) } } };
  makeResident(plain);
  assert.equal(quantB(plain.c.w.data, 32, 4), null);
});
