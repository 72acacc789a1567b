/**
 * Lowercase hex for bytes, strict both ways: decoding refuses uppercase, odd length and any other character,
 * so one byte string has exactly one spelling.
 */
import { ProtocolError } from "./errors.ts";

const DIGITS = "0123456789abcdef";

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += DIGITS[b >> 4]! + DIGITS[b & 15]!;
  return out;
}

/** True when `text` is lowercase hex (of `length` characters when given). */
export function isHex(text: unknown, length?: number): text is string {
  if (typeof text !== "string") return false;
  if (length !== undefined && text.length !== length) return false;
  return text.length % 2 === 0 && /^[0-9a-f]*$/.test(text);
}

/** Decodes lowercase hex; `invalid_hex` for anything else (uppercase, odd length, other characters). */
export function fromHex(text: string, what = "hex"): Uint8Array {
  if (!isHex(text)) {
    const shown = String(text).slice(0, 80);
    throw new ProtocolError(
      "invalid_hex",
      `Cannot decode ${what}: not even-length lowercase hex: "${shown}"`,
    );
  }
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** True when `text` is a 64-character lowercase hex digest. */
export function isRoot(text: unknown): text is string {
  return isHex(text, 64);
}
