/**
 * Byte-level pre-tokenisation shared by the BPE trainer and the tokenizer.json it writes: the text is split
 * around the special tokens, then into individual ASCII digits, then by the GPT-2 regex, and every piece is
 * spelled with the GPT-2 byte-to-character table (one printable character per UTF-8 byte).
 *
 * The digit split is the `Split` pre-tokenizer with the regex `[0-9]` (not `Digits`): the Rust library's
 * `Digits` treats every Unicode numeric character as a digit while the JavaScript library treats only ASCII
 * digits as such, so `Digits` would give the two runtimes different ids for Arabic-Indic numerals.
 *
 * @example
 * ```ts
 * import { preTokenize } from "./byte_level.ts";
 * preTokenize("Hi 42!", []); // ["Hi", "Ġ", "4", "2", "!"]
 * ```
 */

/** The GPT-2 regex of the ByteLevel pre-tokenizer (the same pattern the tokenizer libraries use). */
export const GPT2_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** The character that stands for each byte 0..255 in byte-level token strings. */
export const BYTE_TO_CHAR: readonly string[] = buildByteTable();

/** The byte each byte-level character stands for. */
export const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));

function buildByteTable(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table = new Array<string>(256);
  for (const b of printable) table[b] = String.fromCharCode(b);
  let next = 0;
  for (let b = 0; b < 256; b++) {
    if (table[b] === undefined) table[b] = String.fromCharCode(256 + next++);
  }
  return table;
}

const encoder = new TextEncoder();

/** Spells the UTF-8 bytes of `text` with the byte-level table. */
export function toByteLevel(text: string): string {
  let out = "";
  for (const b of encoder.encode(text)) out += BYTE_TO_CHAR[b]!;
  return out;
}

/** The bytes a byte-level token string stands for; throws on a character outside the table. */
export function fromByteLevel(token: string): Uint8Array {
  const out = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const b = CHAR_TO_BYTE.get(token[i]!);
    if (b === undefined) throw new Error(`Cannot decode byte-level token: character ${i} of "${token}"`);
    out[i] = b;
  }
  return out;
}

/** Splits `text` around every occurrence of the special strings (longest match first, left to right). */
export function splitSpecial(
  text: string,
  specials: readonly string[],
): { text: string; special: boolean }[] {
  const parts: { text: string; special: boolean }[] = [];
  const ordered = [...specials].sort((a, b) => b.length - a.length);
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const hit = ordered.find((s) => s.length > 0 && text.startsWith(s, i));
    if (hit === undefined) {
      i++;
      continue;
    }
    if (i > start) parts.push({ text: text.slice(start, i), special: false });
    parts.push({ text: hit, special: true });
    i += hit.length;
    start = i;
  }
  if (start < text.length) parts.push({ text: text.slice(start), special: false });
  return parts;
}

/** The pre-tokens of ordinary text (no special tokens inside), spelled byte-level. */
export function preTokenizeText(text: string): string[] {
  const out: string[] = [];
  for (const piece of splitDigits(text)) {
    for (const match of piece.matchAll(GPT2_PATTERN)) out.push(toByteLevel(match[0]));
  }
  return out;
}

/** The pre-tokens of `text`, with special tokens left out (nothing is ever merged across them). */
export function preTokenize(text: string, specials: readonly string[]): string[] {
  const out: string[] = [];
  for (const part of splitSpecial(text, specials)) {
    if (part.special) continue;
    for (const piece of preTokenizeText(part.text)) out.push(piece);
  }
  return out;
}

function splitDigits(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (i > start) out.push(text.slice(start, i));
      out.push(text[i]!);
      start = i + 1;
    }
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}
