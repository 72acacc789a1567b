import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { dequantize, halfToFloat } from "../../kernels/gguf_dequant.ts";
import { concat, f32Bytes, u16Bytes, writeGguf } from "./gguf_writer.ts";

function one(dims: number[], type: number, data: Uint8Array): Float32Array {
  const f = readGguf(writeGguf({ tensors: [{ name: "t", dims, type, data }] }));
  return dequantize(f, f.tensors[0]!);
}

/** 16 nibble bytes: element j is j (low nibble), element j + 16 is 15 − j (high nibble). */
const NIBBLES = Uint8Array.from({ length: 16 }, (_, j) => j | ((15 - j) << 4));

Deno.test("half floats decode exactly, including subnormals, the largest finite and signed zero", () => {
  assert.deepEqual(
    [0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff, 0x3555].map(halfToFloat),
    [1, -2, 2 ** -24, 1023 * 2 ** -24, 65504, 0.333251953125],
  );
  assert.ok(Object.is(halfToFloat(0x8000), -0));
  assert.equal(halfToFloat(0x7c00), Infinity);
  assert.ok(Number.isNaN(halfToFloat(0x7e00)));
});

Deno.test("F32, F16 and BF16 tensors decode to their exact float32 values", () => {
  assert.deepEqual([...one([3], 0, f32Bytes([1.5, -0.25, 3e-39]))], [1.5, -0.25, Math.fround(3e-39)]);
  assert.deepEqual([...one([4], 1, u16Bytes([0x3c00, 0xc000, 0x0001, 0x7bff]))], [1, -2, 2 ** -24, 65504]);
  assert.deepEqual([...one([3], 30, u16Bytes([0x3f80, 0xc0a0, 0x0001]))], [1, -5, 2 ** -133]);
});

Deno.test("Q8_0 blocks are fp16 scale then 32 int8, x = q·d", () => {
  const qs = Uint8Array.from({ length: 32 }, (_, j) => (j - 16) & 0xff);
  const block = (d: number) => concat(u16Bytes([d]), qs);
  const out = one([64, 1], 8, concat(block(0x3400), block(0xc000)));
  assert.deepEqual([...out.slice(0, 32)], Array.from({ length: 32 }, (_, j) => (j - 16) * 0.25));
  assert.deepEqual([...out.slice(32)], Array.from({ length: 32 }, (_, j) => (j - 16) * -2));
});

Deno.test("Q4_0 blocks hold low nibbles as elements 0..15 and high nibbles as 16..31, x = (q − 8)·d", () => {
  const out = one([32], 2, concat(u16Bytes([0x4000]), NIBBLES));
  const expected = [
    ...Array.from({ length: 16 }, (_, j) => (j - 8) * 2),
    ...Array.from({ length: 16 }, (_, j) => (7 - j) * 2),
  ];
  assert.deepEqual([...out], expected);
});

Deno.test("Q4_1 blocks add the fp16 min after scaling, x = q·d + m", () => {
  const out = one(
    [32, 2],
    3,
    concat(u16Bytes([0x3800, 0xbc00]), NIBBLES, u16Bytes([0x3c00, 0x0001]), NIBBLES),
  );
  const expected = [
    ...Array.from({ length: 16 }, (_, j) => j * 0.5 - 1),
    ...Array.from({ length: 16 }, (_, j) => (15 - j) * 0.5 - 1),
    // d = 1, m = 2^-24: q + 2^-24 is rounded once to float32, so only q = 0 keeps the min.
    2 ** -24,
    ...Array.from({ length: 15 }, (_, j) => j + 1),
    ...Array.from({ length: 15 }, (_, j) => 15 - j),
    2 ** -24,
  ];
  assert.deepEqual([...out], expected);
});

Deno.test("a non-finite value is refused as non_finite_tensor naming the tensor and element", () => {
  for (
    const [type, data, detail] of [
      [0, f32Bytes([1, NaN]), "element 1 is NaN"],
      [1, u16Bytes([0x7c00]), "element 0 is Infinity"],
      [8, concat(u16Bytes([0x7c00]), new Uint8Array(32).fill(1)), "element 0 is Infinity"],
    ] as const
  ) {
    const dims = type === 8 ? [32] : [data.length / (type === 0 ? 4 : 2)];
    const bytes = writeGguf({ tensors: [{ name: "t", dims, type, data }] });
    const copy = bytes.slice();
    const f = readGguf(bytes);
    assert.throws(() => dequantize(f, f.tensors[0]!), (e: unknown) => {
      assert.ok(e instanceof ProtocolError);
      assert.equal(e.code, "non_finite_tensor");
      assert.equal(e.message, `Cannot dequantise tensor t: ${detail}`);
      return true;
    });
    assert.deepEqual(bytes, copy, "the file bytes are unchanged");
  }
});

Deno.test("a tensor info whose byte length disagrees with its dims is refused as invalid_tensor", () => {
  const f = readGguf(writeGguf({ tensors: [{ name: "t", dims: [2], type: 0, data: f32Bytes([1, 2]) }] }));
  const forged = { ...f.tensors[0]!, byteLength: 4 };
  assert.throws(() => dequantize(f, forged), (e: unknown) => {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.code, "invalid_tensor");
    assert.equal(e.message, `Cannot dequantise tensor t: data is 4 bytes at ${f.dataOffset}, expected 8`);
    return true;
  });
});
