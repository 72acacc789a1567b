import assert from "node:assert/strict";
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import {
  allocSafetensors,
  readSafetensors,
  readValue,
  safetensorsParts,
  tensorsRoot,
  writeSafetensors,
  writeValue,
} from "../../kernels/safetensors.ts";
import { tensor } from "../../kernels/tensor.ts";

const enc = new TextEncoder();

/** Builds a file from a raw header text (padded to 8 when asked) and data bytes. */
function raw(header: string, data: Uint8Array, pad = true): Uint8Array {
  const text = pad ? header.padEnd(Math.ceil(header.length / 8) * 8, " ") : header;
  const h = enc.encode(text);
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

function f32(...values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProtocolError) return e.code;
    throw e;
  }
  return "no error";
}

Deno.test("safetensors writes sorted names, a compact header padded with spaces to 8 and data in order", () => {
  const bytes = writeSafetensors({ b: tensor([1], [2]), a: tensor([2], [1, -0.5]) });
  const header = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},' +
    '"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}';
  assert.deepEqual(bytes, raw(header, f32(1, -0.5, 2)));
  assert.equal(new DataView(bytes.buffer).getBigUint64(0, true) % 8n, 0n);
  assert.equal(tensorsRoot({ a: tensor([2], [1, -0.5]), b: tensor([1], [2]) }), sha256Hex(bytes));
});

Deno.test("safetensors of a single value named value has exactly the documented bytes", () => {
  const bytes = writeValue(tensor([2, 2], [1, 2, 3, 4]));
  const expected = raw('{"value":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', f32(1, 2, 3, 4));
  assert.deepEqual(bytes, expected);
  assert.equal(sha256Hex(bytes), sha256Hex(expected));
  assert.equal(bytes.length, 8 + 64 + 16);
});

Deno.test("safetensors read returns exactly what was written, -0 included", () => {
  const bytes = writeSafetensors({ w: tensor([2, 3], [1, -0, 3.5, 1e-30, -7, 0]), x: tensor([1], [9]) });
  const back = readSafetensors(bytes, { w: [2, 3], x: [1] });
  assert.deepEqual(Array.from(back.w!.data), [1, -0, 3.5, Math.fround(1e-30), -7, 0]);
  assert.ok(Object.is(back.w!.data[1], -0));
  assert.deepEqual(back.w!.shape, [2, 3]);
  assert.deepEqual(writeSafetensors(back), bytes);
  assert.deepEqual(Array.from(readValue(writeValue(tensor([1], [5])), [1]).data), [5]);
});

Deno.test("safetensors write refuses non-finite values with non_finite_tensor", () => {
  assert.equal(code(() => writeSafetensors({ v: tensor([2], [1, NaN]) })), "non_finite_tensor");
  assert.equal(code(() => writeSafetensors({ v: tensor([1], [Infinity]) })), "non_finite_tensor");
});

Deno.test("safetensors read rejects a header length outside 2 to 65,536 bytes", () => {
  const tooBig = new Uint8Array(16);
  new DataView(tooBig.buffer).setBigUint64(0, 65_544n, true);
  assert.equal(code(() => readSafetensors(tooBig, {})), "invalid_tensor");
  const tooSmall = new Uint8Array(16);
  new DataView(tooSmall.buffer).setBigUint64(0, 1n, true);
  assert.equal(code(() => readSafetensors(tooSmall, {})), "invalid_tensor");
  const huge = new Uint8Array(16);
  new DataView(huge.buffer).setBigUint64(0, 1n << 62n, true);
  assert.equal(code(() => readSafetensors(huge, {})), "invalid_tensor");
  assert.equal(code(() => readSafetensors(new Uint8Array(5), {})), "invalid_tensor");
  // The empty file "{}" padded is the smallest valid one.
  assert.deepEqual(readSafetensors(raw("{}", new Uint8Array()), {}), {});
});

Deno.test("safetensors read rejects unsorted, unknown and missing names", () => {
  const unsorted = raw(
    '{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
    f32(1, 2),
  );
  assert.equal(code(() => readSafetensors(unsorted, { a: [1], b: [1] })), "invalid_tensor");
  const one = writeSafetensors({ a: tensor([1], [1]) });
  assert.equal(code(() => readSafetensors(one, { b: [1] })), "invalid_tensor");
  assert.equal(code(() => readSafetensors(one, { a: [1], b: [1] })), "invalid_tensor");
});

Deno.test("safetensors read rejects a wrong dtype or shape", () => {
  const f16 = raw('{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}', f32(1));
  assert.equal(code(() => readSafetensors(f16, { a: [2] })), "invalid_tensor");
  const bytes = writeSafetensors({ a: tensor([2, 1], [1, 2]) });
  assert.equal(code(() => readSafetensors(bytes, { a: [1, 2] })), "invalid_tensor");
  assert.equal(code(() => readSafetensors(bytes, { a: [2] })), "invalid_tensor");
});

Deno.test("safetensors read rejects overlapping, gapped, short and extra data", () => {
  const overlap = raw(
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    f32(1),
  );
  assert.equal(code(() => readSafetensors(overlap, { a: [1], b: [1] })), "invalid_tensor");
  const gap = raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', f32(0, 1));
  assert.equal(code(() => readSafetensors(gap, { a: [1] })), "invalid_tensor");
  const good = writeSafetensors({ a: tensor([2], [1, 2]) });
  assert.equal(code(() => readSafetensors(good.subarray(0, good.length - 1), { a: [2] })), "invalid_tensor");
  const extra = new Uint8Array(good.length + 4);
  extra.set(good);
  assert.equal(code(() => readSafetensors(extra, { a: [2] })), "invalid_tensor");
});

Deno.test("safetensors read rejects a non-canonical header: metadata, whitespace, key order, no padding", () => {
  const data = f32(1);
  const variants = [
    '{"__metadata__":{},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"a": {"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"a":{"shape":[1],"dtype":"F32","data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}\n',
  ];
  for (const v of variants) {
    assert.equal(code(() => readSafetensors(raw(v, data), { a: [1] })), "invalid_tensor", v);
  }
  const unpadded = raw('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', data, false);
  assert.equal(code(() => readSafetensors(unpadded, { a: [1] })), "invalid_tensor");
  const notJson = raw("{not json", data);
  assert.equal(code(() => readSafetensors(notJson, { a: [1] })), "invalid_tensor");
});

Deno.test("safetensors read rejects NaN and infinities with non_finite_tensor", () => {
  for (const v of [NaN, Infinity, -Infinity]) {
    const bytes = raw('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', f32(1, v));
    assert.equal(code(() => readSafetensors(bytes, { a: [2] })), "non_finite_tensor");
  }
});

Deno.test("safetensors read does not alias or change the input bytes", () => {
  const bytes = writeSafetensors({ a: tensor([2], [1, 2]) });
  const copy = bytes.slice();
  const t = readSafetensors(bytes, { a: [2] });
  t.a!.data[0] = 99;
  assert.deepEqual(bytes, copy);
});

Deno.test("safetensors read with view: the tensors are views of aligned bytes, copies of unaligned ones", () => {
  const file = writeSafetensors({ a: tensor([2], [1, -0]), b: tensor([1, 3], [3, 4, 5]) });
  const t = readSafetensors(file, { a: [2], b: [1, 3] }, { view: true });
  assert.equal(t.a!.data.buffer, file.buffer);
  assert.equal(t.b!.data.buffer, file.buffer);
  assert.deepEqual(writeSafetensors(t), file);
  assert.ok(Object.is(t.a!.data[1], -0));
  // The same file one byte into a buffer: its data is not 4-byte aligned, so the values are copied.
  const shifted = new Uint8Array(file.length + 1);
  shifted.set(file, 1);
  const u = readSafetensors(shifted.subarray(1), { a: [2], b: [1, 3] }, { view: true });
  assert.notEqual(u.a!.data.buffer, shifted.buffer);
  assert.deepEqual(writeSafetensors(u), file);
  // The checks still apply: a non-finite value is refused and the bytes are unchanged.
  const nan = raw('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', f32(1, NaN));
  const before = nan.slice();
  assert.equal(code(() => readSafetensors(nan, { a: [2] }, { view: true })), "non_finite_tensor");
  assert.deepEqual(nan, before);
});

Deno.test("allocSafetensors hands out views whose filled bytes equal writeSafetensors", () => {
  const shapes = { "b.weight": [2, 3], a: [4], "c.bias": [1] };
  const { bytes, tensors } = allocSafetensors(shapes);
  assert.deepEqual(Object.keys(tensors).sort(), ["a", "b.weight", "c.bias"]);
  for (const [i, t] of Object.values(tensors).entries()) {
    t.data.forEach((_, j) => t.data[j] = i * 10 + j - 0.5);
  }
  tensors.a!.data[0] = -0;
  assert.deepEqual(bytes, writeSafetensors(tensors));
  assert.equal(tensors["b.weight"]!.data.buffer, bytes.buffer);
  assert.deepEqual(tensors["b.weight"]!.shape, [2, 3]);
  assert.throws(
    () => allocSafetensors({ 'bad"name': [1] }),
    (e: unknown) => (e as ProtocolError).code === "invalid_tensor",
  );
});

Deno.test("safetensorsParts are the file's bytes in pieces, the data viewed where it is, with no finiteness check", () => {
  const data = new Float32Array([1, -0, 2.5, 3, 4, 5]);
  const tensors = { b: { shape: [2, 2], data: data.subarray(2) }, a: tensor([2], [7, -8]) };
  const parts = safetensorsParts(tensors);
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (joined.set(p, at), at + p.length), 0);
  assert.deepEqual(joined, writeSafetensors(tensors));
  assert.equal(parts.length, 3); // header, then a and b in name order
  assert.equal(parts[2]!.buffer, data.buffer); // b's data is not copied
  assert.equal(parts[2]!.byteOffset, 8);
  // A non-finite value is not refused here (writeSafetensors refuses it); a bad size is, as there.
  assert.equal(safetensorsParts({ x: tensor([1], [NaN]) }).length, 2);
  assert.equal(
    code(() => safetensorsParts({ x: { shape: [3], data: new Float32Array(2) } })),
    "invalid_tensor",
  );
});
