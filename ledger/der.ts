/**
 * Strict DER for ECDSA signatures: `30 len 02 rlen r 02 slen s` with minimal lengths, no leading zero byte
 * unless the next byte has its top bit set, no negative integers and nothing after the sequence. Anything
 * else is `invalid_signature`, so every signature has exactly one byte spelling.
 */
import { reject, type Rejection } from "../core/errors.ts";
import { fromHex } from "../core/hex.ts";

/** DER-encodes the pair (r, s). */
export function encodeDer(r: bigint, s: bigint): Uint8Array {
  const ri = derInteger(r);
  const si = derInteger(s);
  const body = new Uint8Array([0x02, ri.length, ...ri, 0x02, si.length, ...si]);
  return new Uint8Array([0x30, body.length, ...body]);
}

function derInteger(n: bigint): Uint8Array {
  let hex = n.toString(16);
  if (hex.length % 2) hex = "0" + hex;
  const bytes = fromHex(hex);
  return bytes[0]! & 0x80 ? new Uint8Array([0, ...bytes]) : bytes;
}

/** Parses a strict DER signature into (r, s). */
export function decodeDer(der: Uint8Array): { ok: true; value: { r: bigint; s: bigint } } | Rejection {
  const bad = (why: string) => reject("invalid_signature", `Cannot parse DER signature: ${why}`);
  // Shortest: 30 06 02 01 r 02 01 s; longest: 30 46 02 21 r(33) 02 21 s(33).
  if (der.length < 8 || der.length > 72) return bad(`length ${der.length} is outside 8..72`);
  if (der[0] !== 0x30) return bad("not a sequence");
  if (der[1] !== der.length - 2) return bad(`sequence length ${der[1]} does not match ${der.length - 2}`);
  let pos = 2;
  const ints: bigint[] = [];
  for (const name of ["r", "s"]) {
    if (der[pos] !== 0x02) return bad(`${name} is not an integer`);
    const len = der[pos + 1];
    if (len === undefined || len === 0 || len > 33 || pos + 2 + len > der.length) {
      return bad(`${name} length is invalid`);
    }
    const bytes = der.subarray(pos + 2, pos + 2 + len);
    if (bytes[0]! & 0x80) return bad(`${name} is negative`);
    if (len > 1 && bytes[0] === 0 && !(bytes[1]! & 0x80)) {
      return bad(`${name} has a superfluous leading zero`);
    }
    let value = 0n;
    for (const b of bytes) value = (value << 8n) | BigInt(b);
    ints.push(value);
    pos += 2 + len;
  }
  if (pos !== der.length) return bad("trailing bytes after s");
  return { ok: true, value: { r: ints[0]!, s: ints[1]! } };
}
