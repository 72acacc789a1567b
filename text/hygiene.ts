/**
 * Corpus hygiene (PROTOCOL §11): a document's id is the SHA-256 of its NFKC-normalised, case-folded,
 * whitespace-collapsed text, so trivially different copies share an id; its held-out role follows from the id;
 * near-duplicates are found with a 64-bit SimHash over 5-word shingles (Hamming distance at most 3).
 *
 * Case folding is `toUpperCase().toLowerCase()` after NFKC, which gives Unicode full case folding for the cases
 * that matter here (ß → ss, final sigma → σ, ŉ → ʼn) without a folding table.
 *
 * @example
 * ```ts
 * import { documentId, simhash64, isNearDuplicate } from "./hygiene.ts";
 * documentId("Hello   World") === documentId("hello world"); // true
 * isNearDuplicate(simhash64(a), simhash64(b));
 * ```
 */
import { createHash } from "node:crypto";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";

/** Hamming distance at or below which two SimHashes are near-duplicates. */
export const NEAR_DUPLICATE_DISTANCE = 3;
/** Words per SimHash shingle. */
export const SHINGLE_WORDS = 5;

/** NFKC, case-folded, whitespace collapsed to single spaces and trimmed. */
export function normalizeText(text: string): string {
  return text.normalize("NFKC").toUpperCase().toLowerCase().normalize("NFKC").split(/\s+/u).filter((w) =>
    w.length > 0
  ).join(" ");
}

/** The document id: sha256 of the normalised text's UTF-8 bytes, lowercase hex. */
export function documentId(text: string): string {
  return sha256Hex(new TextEncoder().encode(normalizeText(text)));
}

/** The role a document plays, decided by its id alone. */
export type HeldOutRole = "training" | "evaluation";

/**
 * The held-out role of a document id: the first 32 bits of the id, modulo 1000, below `perMille` make it an
 * evaluation document (default 100, one in ten).
 */
export function heldOutRole(id: string, perMille = 100): HeldOutRole {
  if (!/^[0-9a-f]{64}$/.test(id)) {
    throw new ProtocolError("invalid_hex", `Cannot decide held-out role: "${id}" is not a document id`);
  }
  if (!Number.isSafeInteger(perMille) || perMille < 0 || perMille > 1000) {
    throw new RangeError(`Cannot decide held-out role: perMille is ${perMille}, expected 0 to 1000`);
  }
  return parseInt(id.slice(0, 8), 16) % 1000 < perMille ? "evaluation" : "training";
}

/**
 * The 64-bit SimHash of a text as 16 lowercase hex characters: every 5-word shingle of the normalised text
 * (the whole text when it has fewer words) is hashed with SHA-256; bit i of the result is set when more
 * shingles have bit i set than clear (bit 0 is the most significant bit of the first digest byte).
 */
export function simhash64(text: string): string {
  const words = normalizeText(text).split(" ").filter((w) => w.length > 0);
  const shingles: string[] = [];
  if (words.length > 0 && words.length < SHINGLE_WORDS) shingles.push(words.join(" "));
  for (let i = 0; i + SHINGLE_WORDS <= words.length; i++) {
    shingles.push(words.slice(i, i + SHINGLE_WORDS).join(" "));
  }
  const weights = new Int32Array(64);
  for (const shingle of shingles) {
    const digest = createHash("sha256").update(shingle).digest();
    for (let bit = 0; bit < 64; bit++) weights[bit]! += (digest[bit >> 3]! >> (7 - (bit & 7))) & 1 ? 1 : -1;
  }
  let hex = "";
  for (let nibble = 0; nibble < 16; nibble++) {
    let v = 0;
    for (let k = 0; k < 4; k++) v = (v << 1) | (weights[nibble * 4 + k]! > 0 ? 1 : 0);
    hex += v.toString(16);
  }
  return hex;
}

/** The number of differing bits of two 16-hex SimHashes. */
export function hammingDistance(a: string, b: string): number {
  if (!/^[0-9a-f]{16}$/.test(a) || !/^[0-9a-f]{16}$/.test(b)) {
    throw new ProtocolError(
      "invalid_hex",
      `Cannot compare SimHashes: "${a}" and "${b}" must be 16 lowercase hex characters`,
    );
  }
  let d = 0;
  for (let i = 0; i < 16; i++) {
    let x = parseInt(a[i]!, 16) ^ parseInt(b[i]!, 16);
    while (x) {
      d += x & 1;
      x >>= 1;
    }
  }
  return d;
}

/** True when two SimHashes are within the near-duplicate distance. */
export function isNearDuplicate(a: string, b: string): boolean {
  return hammingDistance(a, b) <= NEAR_DUPLICATE_DISTANCE;
}
