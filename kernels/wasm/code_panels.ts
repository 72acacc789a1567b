/**
 * Code panels: a second, smaller resident form of a weight that is exactly a block quantisation's values,
 * read by the one-row kernels `matvec_codes` and `matvec_nibbles` (`matmul.wat`) instead of the float32
 * panels when one token is decoded.
 *
 * A weight W [N, K] (a linear layer's, row n = output column n) qualifies when every block of 32 consecutive
 * values of a row is exactly `fround(fround(q·d) + m)` for one float32 pair (d, m) of the block and an
 * integer code q in 0…255 per value, compared bit for bit (−0 included): the dequantised values of a GGUF
 * Q4_1 import are of this form by construction (`kernels/gguf_dequant.ts`: an fp16 scale and min per 32
 * values, codes 0…15), and so are a Q8_0 import's (x = q·d with an fp16 d and q in −127…127: m = the block's
 * smallest value, codes q − q_min). The kernels rebuild each weight exactly, so they multiply by the
 * weight's float32 value itself and every output is the matmul's bits; the panels only change how many
 * bytes a token reads. A weight with a single block that is not of this form (a trained weight, another
 * quantisation) gets no code panels and keeps the float32 row.
 *
 * Two forms (`CodeForm`):
 * - affine (`encodeCodes`), 1.25 bytes a weight, read by `matvec_codes`: each code a byte, each weight
 *   rebuilt as `fround(fround(q·d) + m)` from the code converted to float32. Record (`CODE_RECORD_BYTES`):
 *   the 16 columns' d (float32), their m (float32), then for each of the 32 k-steps the 16 columns' codes.
 * - nibble (`nibbleCodes`, when every code is below 16, as a Q4_1 import's are), 0.75 bytes a weight, read
 *   by `matvec_nibbles`: two codes a byte, and a pair (D, C) = (8d, m − 16d) per block in place of (d, m),
 *   each weight rebuilt as `fround(fround(v·D) + C)` where v = 2 + q/8 is the float32 whose bits are
 *   `0x40000000 | q << 19`: the kernel moves the code's bits into a float's mantissa with integer and byte
 *   operations instead of converting it, and v·D + C = 16d + q·d + m − 16d is the same sum. It is taken
 *   only when every code rebuilds the affine form's float32 bit for bit (D and C exact, as a Q4_1 import's
 *   fp16 d and m make them unless m is far below d's scale). Record (`NIBBLE_RECORD_BYTES`): the 16
 *   columns' D, their C (float32), then for each pair of k-steps 2i, 2i + 1 the 16 columns' codes, byte j =
 *   q(2i) | q(2i + 1) << 4 for column j. A token reads 40% fewer bytes than from affine panels, and decoding
 *   one is bound by those bytes.
 *
 * Panel p holds columns 16p … 16p + 15; its block b of K / 32 is the record at (p·K/32 + b) records.
 *
 * @example
 * ```ts
 * import { codePanelBytes, encodeCodes, nibbleCodes, writeCodePanels } from "./code_panels.ts";
 * const w = new Float32Array(16 * 32).map((_, i) => Math.fround(Math.fround((i % 16) * 0.5) + 0.25));
 * const codes = nibbleCodes(encodeCodes(w, 16, 32)!); // not null: every block is q·0.5 + 0.25, q < 16
 * const panels = new Uint8Array(codePanelBytes(16, 32, "nibble"));
 * writeCodePanels(codes!, 16, 32, panels);
 * ```
 * @module
 */

/** Columns of one code panel (the kernel's four f32x4 accumulators). */
export const CODE_PANEL_COLUMNS = 16;
/** Consecutive values of a row that share one (d, m) pair. */
export const CODE_BLOCK = 32;
/** Bytes of one panel's affine block: 16 d, 16 m (float32), then 32 k-steps of 16 one-byte codes. */
export const CODE_RECORD_BYTES = 4 * CODE_PANEL_COLUMNS * 2 + CODE_BLOCK * CODE_PANEL_COLUMNS;
/** Bytes of one panel's nibble block: 16 D, 16 C (float32), then 16 pairs of k-steps of 16 bytes of codes. */
export const NIBBLE_RECORD_BYTES = 4 * CODE_PANEL_COLUMNS * 2 + (CODE_BLOCK * CODE_PANEL_COLUMNS) / 2;

/** How a weight's code panels store and rebuild it (see the module's documentation). */
export type CodeForm = "affine" | "nibble";

/**
 * A weight's codes (row-major like W, one a byte), each block's pair ([N, K / 32], row-major: d and m, or D
 * and C in the nibble form) and their form.
 */
export interface Codes {
  readonly q: Uint8Array;
  readonly d: Float32Array;
  readonly m: Float32Array;
  readonly form: CodeForm;
}

/** True when a weight [N, K] has the shape code panels need: N a multiple of 16, K one of 32 (not 0). */
export function codeShape(N: number, K: number): boolean {
  return N > 0 && K > 0 && N % CODE_PANEL_COLUMNS === 0 && K % CODE_BLOCK === 0;
}

/** Bytes of the code panels of a weight [N, K] of a code shape in a form. */
export function codePanelBytes(N: number, K: number, form: CodeForm): number {
  const record = form === "nibble" ? NIBBLE_RECORD_BYTES : CODE_RECORD_BYTES;
  return (N / CODE_PANEL_COLUMNS) * (K / CODE_BLOCK) * record;
}

/** `x` rounded to the nearest binary16 value (ties to even), as a number; x ≥ 0 and below 65520. */
function nearestHalf(x: number): number {
  if (x === 0) return 0;
  const e = Math.max(Math.floor(Math.log2(x)), -14); // binary16 subnormals are spaced 2^−24
  const spacing = 2 ** (e - 10);
  const n = x / spacing, r = Math.round(n);
  return (r - n === 0.5 && r % 2 === 1 ? r - 1 : r) * spacing;
}

const fr = Math.fround;

/** `Object.is(x, v)` for numbers that are not NaN (the callers' never are), at half its cost in their loops. */
function same(x: number, v: number): boolean {
  return x === v && (x !== 0 || 1 / x === 1 / v);
}

/**
 * Tries (c, lo) as block b's (d, m) (`w` from `at`, 32 values): when c is finite and every value is
 * `fround(fround(q·c) + lo)` bit for bit with q in 0…255, writes the codes at `q[at…]`, keeps d[b] = c and
 * m[b] = lo, and returns true.
 */
function fits(
  w: Float32Array,
  at: number,
  q: Uint8Array,
  c: number,
  lo: number,
  d: Float32Array,
  m: Float32Array,
  b: number,
): boolean {
  if (!Number.isFinite(c)) return false;
  for (let i = at; i < at + CODE_BLOCK; i++) {
    const v = w[i]!;
    const code = c === 0 ? 0 : Math.round((v - lo) / c);
    if (!(code >= 0 && code <= 255)) return false; // NaN included
    if (!same(fr(fr(code * c) + lo), v)) return false;
    q[i] = code;
  }
  d[b] = c;
  m[b] = lo;
  return true;
}

/**
 * Finds the block's (d, m): m = lo, its smallest value (code 0's), and d one of the steps a block
 * quantisation gives it, as a binary16 (the GGUF scales' precision) or a float32: the range over 15 (Q4_1,
 * whose quantiser gives the largest value code 15), the largest magnitude over 127 (Q8_0: x = q·d with q in
 * −127…127, so with m = lo the codes are q − q_min, 0…254, and q·d is exact), then the range over 14, 13, …
 * 1. True when one fits every value (the codes written).
 */
function findBlock(
  w: Float32Array,
  at: number,
  q: Uint8Array,
  lo: number,
  hi: number,
  d: Float32Array,
  m: Float32Array,
  b: number,
): boolean {
  if (hi === lo) return fits(w, at, q, 0, lo, d, m, b);
  for (let i = 0; i < 16; i++) {
    const step = i === 0 ? (hi - lo) / 15 : i === 1 ? Math.max(-lo, hi) / 127 : (hi - lo) / (16 - i);
    if (fits(w, at, q, nearestHalf(step), lo, d, m, b) || fits(w, at, q, fr(step), lo, d, m, b)) return true;
  }
  return false;
}

/**
 * The codes of W [N, K] (row-major), or null when W has no code shape or some block is not exactly
 * `fround(fround(q·d) + m)` (`findBlock`): the search is cheap where it succeeds (a Q4_1 import's blocks fit
 * at the first try), stops at the first block that fails (a trained weight's first), and is never wrong,
 * because every value is checked bit for bit.
 */
export function encodeCodes(w: Float32Array, N: number, K: number): Codes | null {
  if (!codeShape(N, K) || w.length < N * K) return null;
  const blocks = (N * K) / CODE_BLOCK;
  const q = new Uint8Array(N * K), d = new Float32Array(blocks), m = new Float32Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const at = b * CODE_BLOCK;
    let lo = w[at]!, hi = lo;
    for (let i = at + 1; i < at + CODE_BLOCK; i++) {
      const v = w[i]!;
      if (v < lo || (v === lo && Object.is(v, -0))) lo = v;
      if (v > hi) hi = v;
    }
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) return null;
    if (!findBlock(w, at, q, lo, hi, d, m, b)) return null;
  }
  return { q, d, m, form: "affine" };
}

/** The float32 whose bits are 0x40000000 | q << 19 for a nibble code q (0…15): 2 + q/8. */
export function nibbleValue(q: number): number {
  return 2 + q / 8;
}

/** The greatest common divisor of a block's codes (0 when all are 0). */
function blockGcd(q: Uint8Array, at: number): number {
  let g = 0;
  for (let i = at; i < at + CODE_BLOCK; i++) {
    for (let a = q[i]!; a !== 0;) [g, a] = [a, g % a];
  }
  return g;
}

/**
 * The nibble form of a weight's affine codes (`encodeCodes`), or null when some block has none. A block's
 * codes must be at most 15, or become so divided by their greatest common divisor g (the affine search can
 * land on a step of d/g: codes 0…22 on d/2 where the quantiser's were 0…11 on d), with the step e = fround(g·d)
 * then; each code q from 0 to the largest must rebuild, as `fround(fround(v·D) + C)` with v = `nibbleValue(q)`,
 * D = fround(8e) and C = fround(m − 16e), the affine `fround(fround(g·q·d) + m)` bit for bit (−0 included).
 * Every weight is then the same float32 in both forms. The codes stay one a byte here; `writeCodePanels`
 * packs them two a byte.
 */
export function nibbleCodes(codes: Codes): Codes | null {
  if (codes.form !== "affine") return null;
  const blocks = codes.d.length, d = new Float32Array(blocks), m = new Float32Array(blocks);
  let q = codes.q;
  for (let b = 0; b < blocks; b++) {
    const at = b * CODE_BLOCK;
    let top = 0;
    for (let i = at; i < at + CODE_BLOCK; i++) top = Math.max(top, codes.q[i]!);
    const g = top > 15 ? blockGcd(codes.q, at) : 1;
    top /= g;
    if (top > 15) return null;
    const db = codes.d[b]!, mb = codes.m[b]!, e = fr(g * db), D = fr(8 * e), C = fr(mb - 16 * e);
    for (let k = 0; k <= top; k++) {
      if (!same(fr(fr(nibbleValue(k) * D) + C), fr(fr(g * k * db) + mb))) return null;
    }
    d[b] = D;
    m[b] = C;
    if (g !== 1) {
      if (q === codes.q) q = codes.q.slice();
      for (let i = at; i < at + CODE_BLOCK; i++) q[i] = codes.q[i]! / g;
    }
  }
  return { q, d, m, form: "nibble" };
}

/** Writes the code panels of a weight [N, K] (its codes in either form) into `out` (`codePanelBytes`). */
export function writeCodePanels(codes: Codes, N: number, K: number, out: Uint8Array): void {
  const nb = K / CODE_BLOCK, view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const nibble = codes.form === "nibble", record = nibble ? NIBBLE_RECORD_BYTES : CODE_RECORD_BYTES;
  for (let p = 0; p < N / CODE_PANEL_COLUMNS; p++) {
    for (let b = 0; b < nb; b++) {
      const rec = (p * nb + b) * record;
      for (let j = 0; j < CODE_PANEL_COLUMNS; j++) {
        const n = p * CODE_PANEL_COLUMNS + j, blk = n * nb + b;
        view.setFloat32(rec + 4 * j, codes.d[blk]!, true);
        view.setFloat32(rec + 64 + 4 * j, codes.m[blk]!, true);
        const row = n * K + b * CODE_BLOCK;
        for (let s = 0; s < CODE_BLOCK; s += nibble ? 2 : 1) {
          out[rec + 128 + (nibble ? s / 2 : s) * CODE_PANEL_COLUMNS + j] = nibble
            ? codes.q[row + s]! | (codes.q[row + s + 1]! << 4)
            : codes.q[row + s]!;
        }
      }
    }
  }
}
