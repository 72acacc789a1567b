/**
 * A tiny GGUF writer for tests: builds files byte by byte so every reader path (good and bad) can be exercised
 * without a download. Not part of the product; values are written exactly as given, even when invalid.
 */

/** A typed metadata value; arrays carry their item type and typed items. */
export type WValue =
  | { t: 0 | 1 | 2 | 3 | 4 | 5 | 6 | 12; v: number }
  | { t: 10 | 11; v: bigint }
  | { t: 7; v: boolean | number }
  | { t: 8; v: string }
  | { t: 9; item: number; v: WValue[] }
  | { t: number; raw: Uint8Array };

/** One tensor to write: dims fastest first, data bytes as they go in the data section. */
export interface WTensor {
  name: string;
  dims: number[];
  type: number;
  data: Uint8Array;
  /** Overrides the offset written in the tensor info. */
  offset?: number;
}

/** What to write; `magic`, `version` and `alignment` default to a valid v3 file with alignment 32. */
export interface WFile {
  magic?: string;
  version?: number;
  metadata?: [string, WValue][];
  tensors?: WTensor[];
  alignment?: number;
}

class Out {
  parts: number[] = [];
  u8(x: number) {
    this.parts.push(x & 0xff);
  }
  bytes(b: Uint8Array) {
    for (const x of b) this.parts.push(x);
  }
  num(x: number | bigint, n: number, kind: "u" | "i" | "f") {
    const dv = new DataView(new ArrayBuffer(n));
    if (kind === "f") n === 4 ? dv.setFloat32(0, Number(x), true) : dv.setFloat64(0, Number(x), true);
    else if (n === 1) kind === "u" ? dv.setUint8(0, Number(x)) : dv.setInt8(0, Number(x));
    else if (n === 2) kind === "u" ? dv.setUint16(0, Number(x), true) : dv.setInt16(0, Number(x), true);
    else if (n === 4) kind === "u" ? dv.setUint32(0, Number(x), true) : dv.setInt32(0, Number(x), true);
    else kind === "u" ? dv.setBigUint64(0, BigInt(x), true) : dv.setBigInt64(0, BigInt(x), true);
    this.bytes(new Uint8Array(dv.buffer));
  }
  str(s: string) {
    const b = new TextEncoder().encode(s);
    this.num(BigInt(b.length), 8, "u");
    this.bytes(b);
  }
  pad(alignment: number) {
    while (this.parts.length % alignment !== 0) this.u8(0);
  }
}

function writeValue(o: Out, w: WValue): void {
  if ("raw" in w) return o.bytes(w.raw);
  switch (w.t) {
    case 0:
      return o.num(w.v, 1, "u");
    case 1:
      return o.num(w.v, 1, "i");
    case 2:
      return o.num(w.v, 2, "u");
    case 3:
      return o.num(w.v, 2, "i");
    case 4:
      return o.num(w.v, 4, "u");
    case 5:
      return o.num(w.v, 4, "i");
    case 6:
      return o.num(w.v, 4, "f");
    case 7:
      return o.u8(Number(w.v));
    case 8:
      return o.str(w.v);
    case 9:
      o.num(w.item, 4, "u");
      o.num(BigInt(w.v.length), 8, "u");
      for (const x of w.v) writeValue(o, x);
      return;
    case 10:
      return o.num(w.v, 8, "u");
    case 11:
      return o.num(w.v, 8, "i");
    case 12:
      return o.num(w.v, 8, "f");
  }
}

/** Serialises a GGUF file; tensor data is laid out in order, each padded to the alignment. */
export function writeGguf(f: WFile): Uint8Array {
  const alignment = f.alignment ?? 32;
  const o = new Out();
  o.bytes(new TextEncoder().encode(f.magic ?? "GGUF"));
  o.num(f.version ?? 3, 4, "u");
  const tensors = f.tensors ?? [];
  const metadata = f.metadata ?? [];
  o.num(BigInt(tensors.length), 8, "u");
  o.num(BigInt(metadata.length), 8, "u");
  for (const [k, v] of metadata) {
    o.str(k);
    o.num(v.t, 4, "u");
    writeValue(o, v);
  }
  let rel = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    offsets.push(rel);
    rel += Math.ceil(t.data.length / alignment) * alignment;
  }
  tensors.forEach((t, i) => {
    o.str(t.name);
    o.num(t.dims.length, 4, "u");
    for (const d of t.dims) o.num(BigInt(d), 8, "u");
    o.num(t.type, 4, "u");
    o.num(BigInt(t.offset ?? offsets[i]!), 8, "u");
  });
  o.pad(alignment);
  for (const t of tensors) {
    o.bytes(t.data);
    o.pad(alignment);
  }
  return new Uint8Array(o.parts);
}

/** Little-endian float32 bytes of `values`. */
export function f32Bytes(values: readonly number[] | Float32Array): Uint8Array {
  const a = Float32Array.from(values);
  return new Uint8Array(a.buffer);
}

/** Little-endian u16 bytes of `values` (for F16/BF16 bit patterns and block scales). */
export function u16Bytes(values: readonly number[]): Uint8Array {
  const a = Uint16Array.from(values);
  return new Uint8Array(a.buffer);
}

/** Concatenates byte arrays. */
export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
