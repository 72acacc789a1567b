/**
 * Canonical safetensors files (PROTOCOL §1): the bytes of a component, an activation or a gradient.
 *
 * Layout: an 8-byte little-endian header length `n`, then `n` bytes of compact JSON naming every tensor in
 * sorted order as `{"dtype":"F32","shape":[…],"data_offsets":[begin,end]}` (keys in exactly that order, no
 * `__metadata__`), padded with spaces so that `n` is a multiple of 8, then the tensors' little-endian float32
 * data in the same order with no gaps. One set of tensors has exactly one file; its root is the SHA-256 of
 * the file's bytes. Reading re-encodes the header and refuses any other spelling, so a file that reads is
 * always canonical.
 *
 * @example
 * ```ts
 * import { readSafetensors, writeSafetensors } from "./safetensors.ts";
 * import { tensor } from "./tensor.ts";
 * const bytes = writeSafetensors({ value: tensor([2], [1, 2]) });
 * const back = readSafetensors(bytes, { value: [2] }); // back.value.data = Float32Array [1, 2]
 * ```
 */
import { compareCodePoints } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { MAX_SAFETENSORS_HEADER, MIN_SAFETENSORS_HEADER } from "../core/limits.ts";
import { assertFinite, sameShape, sizeOf, type Tensor } from "./tensor.ts";

/** Named tensors, as a component holds them. */
export type Tensors = Record<string, Tensor>;

/** Expected shapes by tensor name: what a reader accepts. */
export type TensorSpec = Record<string, readonly number[]>;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function headerText(
  entries: { name: string; shape: readonly number[]; begin: number; end: number }[],
): string {
  const parts = entries.map((e) =>
    `${JSON.stringify(e.name)}:{"dtype":"F32","shape":[${
      e.shape.join(",")
    }],"data_offsets":[${e.begin},${e.end}]}`
  );
  const json = `{${parts.join(",")}}`;
  return json.padEnd(Math.ceil(json.length / 8) * 8, " ");
}

function asciiOnly(name: string): boolean {
  return /^[\x21-\x7e]+$/.test(name) && !name.includes('"') && !name.includes("\\");
}

interface Layout {
  readonly names: string[];
  readonly header: Uint8Array;
  readonly begins: number[]; // byte offset of each tensor's data in the file
  readonly size: number; // bytes of the whole file
}

/** The canonical layout of tensors with these shapes (names sorted, data after the padded header). */
function layoutOf(shapes: Record<string, readonly number[]>): Layout {
  const names = Object.keys(shapes).sort(compareCodePoints);
  const entries = [];
  let offset = 0;
  for (const name of names) {
    if (!asciiOnly(name)) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot write safetensors: tensor name ${JSON.stringify(name)}`,
      );
    }
    const shape = shapes[name]!, n = sizeOf(shape);
    entries.push({ name, shape, begin: offset, end: offset + 4 * n });
    offset += 4 * n;
  }
  const header = new TextEncoder().encode(headerText(entries));
  if (header.length > MAX_SAFETENSORS_HEADER) {
    throw new ProtocolError("invalid_tensor", `Cannot write safetensors: header is ${header.length} bytes`);
  }
  const start = 8 + header.length;
  return { names, header, begins: entries.map((e) => start + e.begin), size: start + offset };
}

function headed(layout: Layout, shared = false): Uint8Array<ArrayBufferLike> {
  const out = shared ? new Uint8Array(new SharedArrayBuffer(layout.size)) : new Uint8Array(layout.size);
  new DataView(out.buffer).setBigUint64(0, BigInt(layout.header.length), true);
  out.set(layout.header, 8);
  return out;
}

/** Each tensor's shape; `invalid_tensor` when its data does not hold exactly that many values. */
function shapesOf(tensors: Tensors): Record<string, readonly number[]> {
  const shapes: Record<string, readonly number[]> = {};
  for (const [name, t] of Object.entries(tensors)) {
    if (t.data.length !== sizeOf(t.shape)) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot write ${name}: ${t.data.length} values for [${t.shape}]`,
      );
    }
    shapes[name] = t.shape;
  }
  return shapes;
}

/** The canonical safetensors bytes of `tensors`; `non_finite_tensor` if any value is NaN or infinite. */
export function writeSafetensors(tensors: Tensors): Uint8Array {
  const layout = layoutOf(shapesOf(tensors));
  for (const name of layout.names) assertFinite(tensors[name]!.data, `tensor ${name}`);
  const out = headed(layout);
  layout.names.forEach((name, i) => {
    const data = tensors[name]!.data, at = layout.begins[i]!;
    if (LITTLE_ENDIAN) {
      out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    } else {
      const view = new DataView(out.buffer, at, data.byteLength);
      for (let i = 0; i < data.length; i++) view.setFloat32(4 * i, data[i]!, true);
    }
  });
  return out;
}

/**
 * The bytes `writeSafetensors(tensors)` would return, as pieces to be read one after another: the length and
 * header, then each tensor's data where it already is (on a big-endian host, the whole file as one piece).
 * Nothing is copied and finiteness is not checked, so for a set with a non-finite value these are the bytes
 * of no canonical file (and hash to no root a reader accepts). For hashing a set of tensors without writing
 * its file (`sha256` and `chunkRootOfParts` of the pieces). `invalid_tensor` on a bad name or size.
 */
export function safetensorsParts(tensors: Tensors): Uint8Array[] {
  if (!LITTLE_ENDIAN) return [writeSafetensors(tensors)];
  const layout = layoutOf(shapesOf(tensors));
  const head = new Uint8Array(8 + layout.header.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(layout.header.length), true);
  head.set(layout.header, 8);
  return [
    head,
    ...layout.names.map((name) => {
      const d = tensors[name]!.data;
      return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    }),
  ];
}

/** True when `allocSafetensors` can hand out float32 views into file bytes (a little-endian host). */
export const VIEWS_IN_FILES: boolean = LITTLE_ENDIAN;

/**
 * The bytes of a canonical safetensors file for tensors of these shapes, with each tensor's data a
 * `Float32Array` view into those bytes (all +0 until written): filling the views fills the file, with no
 * second copy. The bytes equal `writeSafetensors` of the same tensors once every value is finite; the caller
 * checks that. With `shared` the bytes are on a `SharedArrayBuffer`, so task workers (`task_pool.ts`) can
 * hash and update them where they are (such bytes cannot be a `fetch` body without a copy). Needs a
 * little-endian host (`VIEWS_IN_FILES`); throws `invalid_tensor` on a bad name.
 */
export function allocSafetensors(
  shapes: Record<string, readonly number[]>,
  options: { readonly shared?: boolean } = {},
): { bytes: Uint8Array; tensors: Tensors } {
  if (!LITTLE_ENDIAN) throw new Error("Cannot view float32 data in a safetensors file on a big-endian host");
  const layout = layoutOf(shapes);
  const bytes = headed(layout, options.shared === true && typeof SharedArrayBuffer === "function");
  const tensors: Tensors = {};
  layout.names.forEach((name, i) => {
    const shape = [...shapes[name]!];
    tensors[name] = { shape, data: new Float32Array(bytes.buffer, layout.begins[i]!, sizeOf(shape)) };
  });
  return { bytes, tensors };
}

/** The root of a set of tensors: SHA-256 of its canonical file. */
export function tensorsRoot(tensors: Tensors): string {
  return sha256Hex(writeSafetensors(tensors));
}

function bad(message: string): ProtocolError {
  return new ProtocolError("invalid_tensor", `Cannot read safetensors: ${message}`);
}

/**
 * Reads canonical safetensors bytes holding exactly the tensors of `spec` with those shapes. Rejects
 * (`invalid_tensor`) a header length outside 2–65,536 or not a multiple of 8, a header that is not the
 * canonical spelling, unsorted, unknown or missing names, a dtype other than F32, a wrong shape, data offsets
 * that overlap, leave gaps or run short, and bytes after the data; `non_finite_tensor` for NaN or infinities.
 *
 * With `{ view: true }` each tensor's data is a `Float32Array` view of `bytes` instead of a copy, where the
 * host is little-endian and the data is 4-byte aligned (else a copy, as without the option): no second copy
 * of a large file, but the tensors then change if the bytes do, so the caller must not write to them.
 */
export function readSafetensors(
  bytes: Uint8Array,
  spec: TensorSpec,
  options: { readonly view?: boolean } = {},
): Tensors {
  if (bytes.length < 8) throw bad(`file is ${bytes.length} bytes, shorter than the 8-byte length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const big = view.getBigUint64(0, true);
  if (big < BigInt(MIN_SAFETENSORS_HEADER) || big > BigInt(MAX_SAFETENSORS_HEADER)) {
    throw bad(`header length is ${big}, expected ${MIN_SAFETENSORS_HEADER}-${MAX_SAFETENSORS_HEADER}`);
  }
  const n = Number(big);
  if (n % 8 !== 0) throw bad(`header length is ${n}, not a multiple of 8`);
  if (8 + n > bytes.length) throw bad(`header length is ${n} but the file has ${bytes.length} bytes`);
  let text: string;
  let parsed: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + n));
    parsed = JSON.parse(text);
  } catch {
    throw bad("header is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw bad("header is not a JSON object");
  }
  const header = parsed as Record<string, unknown>;
  const names = Object.keys(header);
  for (let i = 1; i < names.length; i++) {
    if (compareCodePoints(names[i - 1]!, names[i]!) >= 0) {
      throw bad(
        `tensor names are not sorted: ${JSON.stringify(names[i - 1])} before ${JSON.stringify(names[i])}`,
      );
    }
  }
  for (const name of names) {
    if (!Object.hasOwn(spec, name)) throw bad(`unknown tensor ${JSON.stringify(name)}`);
  }
  for (const name of Object.keys(spec)) {
    if (!Object.hasOwn(header, name)) throw bad(`missing tensor ${JSON.stringify(name)}`);
  }
  const entries = [];
  let offset = 0;
  for (const name of names) {
    const entry = header[name] as Record<string, unknown> | null;
    if (typeof entry !== "object" || entry === null) throw bad(`entry ${name} is not an object`);
    if (entry.dtype !== "F32") {
      throw bad(`tensor ${name} has dtype ${JSON.stringify(entry.dtype)}, expected F32`);
    }
    const shape = spec[name]!;
    if (!Array.isArray(entry.shape) || !sameShape(entry.shape as number[], shape)) {
      throw bad(`tensor ${name} has shape ${JSON.stringify(entry.shape)}, expected [${shape}]`);
    }
    const size = 4 * sizeOf(shape);
    const offsets = entry.data_offsets;
    if (!Array.isArray(offsets) || offsets[0] !== offset || offsets[1] !== offset + size) {
      throw bad(
        `tensor ${name} has data_offsets ${JSON.stringify(offsets)}, expected [${offset},${offset + size}]`,
      );
    }
    entries.push({ name, shape, begin: offset, end: offset + size });
    offset += size;
  }
  if (text !== headerText(entries)) throw bad("header is not in canonical form");
  const dataStart = 8 + n;
  if (bytes.length !== dataStart + offset) {
    throw bad(`data is ${bytes.length - dataStart} bytes, expected ${offset}`);
  }
  const out: Tensors = {};
  for (const e of entries) {
    const at = bytes.byteOffset + dataStart + e.begin;
    const data = options.view && LITTLE_ENDIAN && at % 4 === 0
      ? new Float32Array(bytes.buffer, at, (e.end - e.begin) / 4)
      : new Float32Array((e.end - e.begin) / 4);
    if (data.buffer === bytes.buffer) {
      // a view of the file's own bytes: nothing to copy
    } else if (LITTLE_ENDIAN) {
      new Uint8Array(data.buffer).set(bytes.subarray(dataStart + e.begin, dataStart + e.end));
    } else {
      for (let i = 0; i < data.length; i++) data[i] = view.getFloat32(dataStart + e.begin + 4 * i, true);
    }
    assertFinite(data, `tensor ${e.name}`);
    out[e.name] = { shape: [...e.shape], data };
  }
  return out;
}

/** Writes one activation or gradient as a single-tensor file named `value` (PROTOCOL §1). */
export function writeValue(t: Tensor): Uint8Array {
  return writeSafetensors({ value: t });
}

/** Reads a single-tensor file named `value` with the expected shape. */
export function readValue(bytes: Uint8Array, shape: readonly number[]): Tensor {
  return readSafetensors(bytes, { value: shape }).value!;
}
