/**
 * GGUF reader (format version 3, as written by llama.cpp): header, metadata key/values of every type, tensor
 * infos and the aligned data section. Bytes in, a parsed view out; tensor data is decoded by
 * `gguf_dequant.ts` and mapped to our model layout by `gguf_llama.ts`.
 *
 * Layout (all little-endian): magic `GGUF`, u32 version, u64 tensor count, u64 metadata count, the metadata
 * (string key, u32 value type, value), the tensor infos (string name, u32 dimension count, u64 dims with the
 * fastest-varying first, u32 tensor type, u64 offset into the data section), padding to `general.alignment`
 * (default 32), then the data section. Strings are u64 length + UTF-8 bytes.
 *
 * @example
 * ```ts
 * import { findTensor, readGguf } from "./gguf.ts";
 * const file = readGguf(await Deno.readFile("model.gguf"));
 * file.metadata.get("llama.block_count"); // 30 (typed accessors are in gguf_meta.ts)
 * findTensor(file, "token_embd.weight").dims; // [576, 49152]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { GGML_TYPES, tensorByteLength } from "./gguf_types.ts";

/** A metadata value: integers up to 32 bits and floats as numbers, 64-bit integers as bigints. */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

/** One tensor's description; `dims` lists the fastest-varying dimension first (llama.cpp's `ne`). */
export interface GgufTensorInfo {
  readonly name: string;
  readonly dims: readonly number[];
  readonly type: number;
  /** Byte offset of the tensor's data from the start of the file. */
  readonly offset: number;
  readonly byteLength: number;
}

/** A parsed GGUF file; tensor data stays in `bytes`. */
export interface GgufFile {
  readonly version: number;
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
  readonly alignment: number;
  /** Byte offset where the metadata ends and the tensor infos begin. */
  readonly metadataEnd: number;
  /** Byte offset of the data section. */
  readonly dataOffset: number;
  readonly bytes: Uint8Array;
}

/** The only GGUF version this reader accepts. */
export const GGUF_VERSION = 3;
/** Upper bound on tensor and metadata counts, so a corrupt header cannot make us allocate without limit. */
export const GGUF_MAX_ENTRIES = 1 << 20;
const MAGIC = 0x46554747; // "GGUF" read as little-endian u32
const MAX_DIMS = 4;
const MAX_ARRAY_DEPTH = 8;

class Cursor {
  pos = 0;
  readonly view: DataView;
  readonly decoder = new TextDecoder("utf-8", { fatal: true });
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number, what: string): number {
    const at = this.pos;
    if (n > this.bytes.length - at) {
      throw invalid(
        `file is truncated: ${what} needs ${n} bytes at byte ${at}, file has ${this.bytes.length}`,
      );
    }
    this.pos += n;
    return at;
  }
  u8 = (w: string) => this.view.getUint8(this.need(1, w));
  i8 = (w: string) => this.view.getInt8(this.need(1, w));
  u16 = (w: string) => this.view.getUint16(this.need(2, w), true);
  i16 = (w: string) => this.view.getInt16(this.need(2, w), true);
  u32 = (w: string) => this.view.getUint32(this.need(4, w), true);
  i32 = (w: string) => this.view.getInt32(this.need(4, w), true);
  f32 = (w: string) => this.view.getFloat32(this.need(4, w), true);
  f64 = (w: string) => this.view.getFloat64(this.need(8, w), true);
  u64 = (w: string) => this.view.getBigUint64(this.need(8, w), true);
  i64 = (w: string) => this.view.getBigInt64(this.need(8, w), true);
  /** A u64 that must fit in a safe integer (lengths, counts, offsets). */
  size(w: string): number {
    const v = this.u64(w);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(`${w} is ${v}, larger than a safe integer`);
    return Number(v);
  }
  str(w: string): string {
    const n = this.size(`${w} length`);
    const at = this.need(n, w);
    try {
      return this.decoder.decode(this.bytes.subarray(at, at + n));
    } catch {
      throw invalid(`${w} at byte ${at} is not valid UTF-8`);
    }
  }
}

function invalid(detail: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot read GGUF: ${detail}`);
}

/** Names of the metadata value types, indexed by their GGUF id. */
export const GGUF_VALUE_TYPES = [
  "uint8",
  "int8",
  "uint16",
  "int16",
  "uint32",
  "int32",
  "float32",
  "bool",
  "string",
  "array",
  "uint64",
  "int64",
  "float64",
] as const;

function readValue(c: Cursor, type: number, what: string, depth: number): GgufValue {
  switch (type) {
    case 0:
      return c.u8(what);
    case 1:
      return c.i8(what);
    case 2:
      return c.u16(what);
    case 3:
      return c.i16(what);
    case 4:
      return c.u32(what);
    case 5:
      return c.i32(what);
    case 6:
      return c.f32(what);
    case 7: {
      const b = c.u8(what);
      if (b > 1) throw invalid(`${what} is a bool with byte ${b}, expected 0 or 1`);
      return b === 1;
    }
    case 8:
      return c.str(what);
    case 9: {
      if (depth >= MAX_ARRAY_DEPTH) throw invalid(`${what} nests arrays deeper than ${MAX_ARRAY_DEPTH}`);
      const itemType = c.u32(`${what} item type`);
      const n = c.size(`${what} length`);
      // Every item takes at least one byte, so a length beyond the remaining bytes is truncation.
      if (n > c.bytes.length - c.pos) {
        throw invalid(
          `file is truncated: ${what} has ${n} items, only ${c.bytes.length - c.pos} bytes remain`,
        );
      }
      const out: GgufValue[] = new Array(n);
      for (let i = 0; i < n; i++) out[i] = readValue(c, itemType, `${what}[${i}]`, depth + 1);
      return out;
    }
    case 10:
      return c.u64(what);
    case 11:
      return c.i64(what);
    case 12:
      return c.f64(what);
    default:
      throw invalid(`${what} has unknown value type ${type}`);
  }
}

/** Parses a GGUF file's header, metadata and tensor infos, checking every tensor's data lies in the file. */
export function readGguf(bytes: Uint8Array): GgufFile {
  const c = new Cursor(bytes);
  const magic = c.u32("magic");
  if (magic !== MAGIC) {
    throw invalid(
      `magic is 0x${magic.toString(16).padStart(8, "0")}, expected 0x${MAGIC.toString(16)} (GGUF)`,
    );
  }
  const version = c.u32("version");
  if (version !== GGUF_VERSION) throw invalid(`version is ${version}, expected ${GGUF_VERSION}`);
  const tensorCount = c.size("tensor count");
  const kvCount = c.size("metadata count");
  if (tensorCount > GGUF_MAX_ENTRIES) {
    throw invalid(`tensor count is ${tensorCount}, at most ${GGUF_MAX_ENTRIES}`);
  }
  if (kvCount > GGUF_MAX_ENTRIES) throw invalid(`metadata count is ${kvCount}, at most ${GGUF_MAX_ENTRIES}`);

  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.str(`metadata key ${i}`);
    if (metadata.has(key)) throw invalid(`metadata key ${key} appears twice`);
    const type = c.u32(`metadata ${key} type`);
    metadata.set(key, readValue(c, type, `metadata ${key}`, 0));
  }

  const metadataEnd = c.pos;
  let alignment = 32;
  const declared = metadata.get("general.alignment");
  if (declared !== undefined) {
    if (
      typeof declared !== "number" || !Number.isInteger(declared) || declared <= 0 ||
      (declared & (declared - 1)) !== 0
    ) {
      throw invalid(`general.alignment is ${String(declared)}, expected a power of two`);
    }
    alignment = declared;
  }

  const raw: { name: string; dims: number[]; type: number; rel: number }[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = c.str(`tensor name ${i}`);
    if (names.has(name)) throw invalid(`tensor ${name} appears twice`);
    names.add(name);
    const nDims = c.u32(`tensor ${name} dimension count`);
    if (nDims < 1 || nDims > MAX_DIMS) {
      throw invalid(`tensor ${name} has ${nDims} dimensions, expected 1 to 4`);
    }
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.size(`tensor ${name} dimension ${d}`));
    const type = c.u32(`tensor ${name} type`);
    const rel = c.size(`tensor ${name} offset`);
    raw.push({ name, dims, type, rel });
  }
  const dataOffset = Math.ceil(c.pos / alignment) * alignment;

  const tensors: GgufTensorInfo[] = raw.map(({ name, dims, type, rel }) => {
    if (!GGML_TYPES.has(type)) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot read GGUF tensor ${name}: type ${type} is not supported`,
      );
    }
    if (rel % alignment !== 0) {
      throw invalid(`tensor ${name} offset ${rel} is not a multiple of ${alignment}`);
    }
    const byteLength = tensorByteLength(name, type, dims);
    const offset = dataOffset + rel;
    if (offset + byteLength > bytes.length) {
      throw invalid(
        `file is truncated: tensor ${name} data ends at byte ${
          offset + byteLength
        }, file has ${bytes.length}`,
      );
    }
    return { name, dims, type, offset, byteLength };
  });
  return { version, metadata, tensors, alignment, metadataEnd, dataOffset, bytes };
}

/** The tensor info named `name`, or a clear `invalid_model` error when the file has none. */
export function findTensor(file: GgufFile, name: string): GgufTensorInfo {
  const t = file.tensors.find((x) => x.name === name);
  if (t === undefined) throw invalid(`tensor ${name} is missing`);
  return t;
}
