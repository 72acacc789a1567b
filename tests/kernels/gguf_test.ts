import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { findTensor, readGguf } from "../../kernels/gguf.ts";
import { metaNumber, metaString, metaStringArray } from "../../kernels/gguf_meta.ts";
import { f32Bytes, writeGguf, type WValue } from "./gguf_writer.ts";

function code(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProtocolError) return [e.code, e.message];
    throw e;
  }
  throw new Error("expected a ProtocolError");
}

Deno.test("metadata of every value type is read back with its exact value", () => {
  const bytes = writeGguf({
    metadata: [
      ["u8", { t: 0, v: 255 }],
      ["i8", { t: 1, v: -128 }],
      ["u16", { t: 2, v: 65535 }],
      ["i16", { t: 3, v: -32768 }],
      ["u32", { t: 4, v: 4294967295 }],
      ["i32", { t: 5, v: -2147483648 }],
      ["f32", { t: 6, v: 0.1 }],
      ["bool", { t: 7, v: true }],
      ["str", { t: 8, v: "héllo ✓" }],
      ["arr", { t: 9, item: 4, v: [{ t: 4, v: 1 }, { t: 4, v: 2 }] }],
      ["u64", { t: 10, v: 18446744073709551615n }],
      ["i64", { t: 11, v: -9223372036854775808n }],
      ["f64", { t: 12, v: 0.1 }],
      ["nested", {
        t: 9,
        item: 9,
        v: [{ t: 9, item: 8, v: [{ t: 8, v: "a" }] }, { t: 9, item: 8, v: [] }],
      }],
    ],
  });
  const f = readGguf(bytes);
  assert.equal(f.version, 3);
  assert.deepEqual([...f.metadata.entries()], [
    ["u8", 255],
    ["i8", -128],
    ["u16", 65535],
    ["i16", -32768],
    ["u32", 4294967295],
    ["i32", -2147483648],
    ["f32", Math.fround(0.1)],
    ["bool", true],
    ["str", "héllo ✓"],
    ["arr", [1, 2]],
    ["u64", 18446744073709551615n],
    ["i64", -9223372036854775808n],
    ["f64", 0.1],
    ["nested", [["a"], []]],
  ]);
  assert.equal(metaNumber(f, "u32"), 4294967295);
  assert.equal(metaString(f, "str"), "héllo ✓");
  assert.equal(f.dataOffset % 32, 0);
  assert.equal(f.tensors.length, 0);
});

Deno.test("the metadata ends after the last value and the data section starts at the next alignment", () => {
  // 24 header bytes, key "k" (8 + 1), type (4), u8 value (1) = 38.
  const f = readGguf(writeGguf({ metadata: [["k", { t: 0, v: 7 }]] }));
  assert.equal(f.metadataEnd, 38);
  assert.equal(f.dataOffset, 64);
});

Deno.test("tensor infos give absolute offsets after the aligned header", () => {
  const bytes = writeGguf({
    metadata: [["general.alignment", { t: 4, v: 64 }]],
    tensors: [
      { name: "a", dims: [3], type: 0, data: f32Bytes([1, 2, 3]) },
      { name: "b", dims: [2, 2], type: 0, data: f32Bytes([4, 5, 6, 7]) },
    ],
    alignment: 64,
  });
  const f = readGguf(bytes);
  assert.equal(f.alignment, 64);
  assert.equal(f.dataOffset % 64, 0);
  assert.deepEqual(f.tensors.map((t) => [t.name, t.dims, t.type, t.offset - f.dataOffset, t.byteLength]), [
    ["a", [3], 0, 0, 12],
    ["b", [2, 2], 0, 64, 16],
  ]);
  assert.equal(findTensor(f, "b").offset, f.dataOffset + 64);
  assert.deepEqual([...new Float32Array(bytes.slice(f.dataOffset + 64, f.dataOffset + 80).buffer)], [
    4,
    5,
    6,
    7,
  ]);
});

Deno.test("a file with the wrong magic is refused as invalid_model", () => {
  const bytes = writeGguf({ magic: "GGML" });
  assert.deepEqual(code(() => readGguf(bytes)), [
    "invalid_model",
    "Cannot read GGUF: magic is 0x4c4d4747, expected 0x46554747 (GGUF)",
  ]);
});

Deno.test("versions other than 3 are refused", () => {
  for (const version of [1, 2, 4]) {
    assert.deepEqual(code(() => readGguf(writeGguf({ version }))), [
      "invalid_model",
      `Cannot read GGUF: version is ${version}, expected 3`,
    ]);
  }
});

Deno.test("a header cut anywhere is refused as truncated, never read past the end", () => {
  const bytes = writeGguf({
    metadata: [["k", { t: 8, v: "value" }], ["a", { t: 9, item: 5, v: [{ t: 5, v: 7 }] }]],
    tensors: [{ name: "w", dims: [4], type: 0, data: f32Bytes([1, 2, 3, 4]) }],
  });
  const full = readGguf(bytes);
  for (let cut = 0; cut < full.dataOffset - 31; cut++) {
    const [c, m] = code(() => readGguf(bytes.slice(0, cut)));
    assert.equal(c, "invalid_model", `cut at ${cut}`);
    assert.match(m, /^Cannot read GGUF: file is truncated/, `cut at ${cut}: ${m}`);
  }
});

Deno.test("tensor data running past the end of the file is refused", () => {
  const bytes = writeGguf({
    tensors: [{ name: "w", dims: [8], type: 0, data: f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]) }],
  });
  const f = readGguf(bytes);
  assert.deepEqual(code(() => readGguf(bytes.slice(0, f.dataOffset + 31))), [
    "invalid_model",
    `Cannot read GGUF: file is truncated: tensor w data ends at byte ${f.dataOffset + 32}, file has ${
      f.dataOffset + 31
    }`,
  ]);
});

Deno.test("an unknown metadata value type is refused", () => {
  const bytes = writeGguf({ metadata: [["odd", { t: 13, raw: new Uint8Array(4) }]] });
  assert.deepEqual(code(() => readGguf(bytes)), [
    "invalid_model",
    "Cannot read GGUF: metadata odd has unknown value type 13",
  ]);
});

Deno.test("an unsupported tensor type is refused as invalid_tensor naming the tensor", () => {
  const bytes = writeGguf({
    tensors: [{ name: "blk.0.x", dims: [256], type: 14, data: new Uint8Array(210) }],
  });
  assert.deepEqual(code(() => readGguf(bytes)), [
    "invalid_tensor",
    "Cannot read GGUF tensor blk.0.x: type 14 is not supported",
  ]);
});

Deno.test("a quantised row that is not whole blocks is refused", () => {
  const bytes = writeGguf({ tensors: [{ name: "q", dims: [48, 1], type: 8, data: new Uint8Array(68) }] });
  assert.deepEqual(code(() => readGguf(bytes)), [
    "invalid_tensor",
    "Cannot read GGUF tensor q: row length is 48, not a multiple of the Q8_0 block 32",
  ]);
});

Deno.test("duplicate keys, duplicate tensors, bad alignment, bad bools and bad offsets are refused", () => {
  const cases: [Uint8Array, string][] = [
    [writeGguf({ metadata: [["k", { t: 4, v: 1 }], ["k", { t: 4, v: 2 }]] }), "metadata key k appears twice"],
    [
      writeGguf({
        tensors: [{ name: "t", dims: [1], type: 0, data: f32Bytes([1]) }, {
          name: "t",
          dims: [1],
          type: 0,
          data: f32Bytes([1]),
        }],
      }),
      "tensor t appears twice",
    ],
    [
      writeGguf({ metadata: [["general.alignment", { t: 4, v: 24 }]] }),
      "general.alignment is 24, expected a power of two",
    ],
    [writeGguf({ metadata: [["b", { t: 7, v: 2 }]] }), "metadata b is a bool with byte 2, expected 0 or 1"],
    [
      writeGguf({ tensors: [{ name: "t", dims: [1], type: 0, data: f32Bytes([1]), offset: 4 }] }),
      "tensor t offset 4 is not a multiple of 32",
    ],
    [
      writeGguf({ tensors: [{ name: "t", dims: [1, 1, 1, 1, 1], type: 0, data: f32Bytes([1]) }] }),
      "tensor t has 5 dimensions, expected 1 to 4",
    ],
    [
      writeGguf({ metadata: [["s", { t: 8, raw: new Uint8Array([1, 0, 0, 0, 0, 0, 0, 0, 0xff]) }]] }),
      "metadata s at byte 45 is not valid UTF-8",
    ],
  ];
  for (const [bytes, detail] of cases) {
    assert.deepEqual(code(() => readGguf(bytes)), ["invalid_model", `Cannot read GGUF: ${detail}`]);
  }
});

Deno.test("typed metadata accessors name the key and the wrong value", () => {
  const f = readGguf(writeGguf({ metadata: [["s", { t: 8, v: "x" }], ["n", { t: 4, v: 3 }]] }));
  assert.deepEqual(code(() => metaNumber(f, "s")), [
    "invalid_model",
    "Cannot read GGUF: metadata s is string x, expected a number",
  ]);
  assert.deepEqual(code(() => metaString(f, "missing")), [
    "invalid_model",
    "Cannot read GGUF: metadata key missing is missing",
  ]);
  assert.deepEqual(code(() => metaStringArray(f, "n")), [
    "invalid_model",
    "Cannot read GGUF: metadata n is number 3, expected an array of strings",
  ]);
  assert.deepEqual(code(() => findTensor(f, "w")), [
    "invalid_model",
    "Cannot read GGUF: tensor w is missing",
  ]);
});

Deno.test("counts beyond the bound and arrays nested deeper than 8 are refused before any allocation", () => {
  const header = new Uint8Array(24);
  const v = new DataView(header.buffer);
  v.setUint32(0, 0x46554747, true);
  v.setUint32(4, 3, true);
  v.setBigUint64(8, 2n ** 20n + 1n, true);
  assert.deepEqual(code(() => readGguf(header)), [
    "invalid_model",
    "Cannot read GGUF: tensor count is 1048577, at most 1048576",
  ]);
  v.setBigUint64(8, 0n, true);
  v.setBigUint64(16, 2n ** 63n, true);
  assert.deepEqual(code(() => readGguf(header)), [
    "invalid_model",
    "Cannot read GGUF: metadata count is 9223372036854775808, larger than a safe integer",
  ]);
  let deep: WValue = { t: 4, v: 1 };
  for (let i = 0; i < 9; i++) deep = { t: 9, item: deep.t, v: [deep] };
  const [c, m] = code(() => readGguf(writeGguf({ metadata: [["deep", deep]] })));
  assert.equal(c, "invalid_model");
  assert.match(m, /^Cannot read GGUF: metadata deep(\[0\]){8} nests arrays deeper than 8$/);
});

Deno.test("64-bit integers in the safe range read as numbers through metaNumber", () => {
  const f = readGguf(writeGguf({ metadata: [["a", { t: 10, v: 7n }], ["b", { t: 10, v: 2n ** 60n }]] }));
  assert.equal(metaNumber(f, "a"), 7);
  assert.deepEqual(code(() => metaNumber(f, "b")), [
    "invalid_model",
    "Cannot read GGUF: metadata b is bigint 1152921504606846976, expected a number",
  ]);
});
