/**
 * Block-quantised copies of float32 weights that are exact: for a matrix W [N,K] whose every value is
 * `fround(fround(q·d) + m)` for an integer code q and one float32 pair (d, m) per 32 consecutive values of a
 * row — what a GGUF import (`gguf_dequant.ts`: Q4_1 is `q·d + m`, q in 0…15; Q8_0 is `q·d`, q in −128…127,
 * written here with m = −0, for which the add changes no bit) leaves in the genesis and serving models —
 * `quantBlocks` finds codes and pairs and checks, with exactly those two float32 operations, that they
 * rebuild every value bit for bit; for any other matrix (a trained one) it returns null. The matmul's
 * one-row kernel (`qmatvec` in `wasm/matmul.wat`) then reads 1.25 bytes a weight instead of 4 and rebuilds
 * each weight by the same two operations before the product, so its outputs are the float32 matmul's bits:
 * decoding a token reads about a third of the bytes.
 *
 * @example
 * ```ts
 * import { quantBlocks } from "./quant_weights.ts";
 * const w = new Float32Array(4 * 32).map((_, i) => (i % 16) * 0.5 + 0.25); // Q4_1 values: d 0.5, m 0.25
 * quantBlocks(w, 4, 32)?.codes[3]; // 3
 * ```
 * @module
 */

/** Values per block (along a row). */
export const QUANT_BLOCK = 32;
/** Rows per quad (the kernel's lanes). */
export const QUANT_QUAD = 4;
/** Bytes of one quad's block in the packed layout: d ×4, m ×4 (float32), then 32×4 int8 codes. */
export const QUANT_QUAD_BLOCK_BYTES = 32 + QUANT_BLOCK * QUANT_QUAD;

/** A matrix's codes (int8, row-major [N,K]) and each block's pair (row-major [N, K/32]). */
export interface QuantBlocks {
  readonly codes: Int8Array;
  readonly d: Float32Array;
  readonly m: Float32Array;
}

const fr = Math.fround;
const f16 = (Math as unknown as { f16round?: (x: number) => number }).f16round ?? fr;

/** True when every value of `w[at, at+32)` is `fround(fround(q·d) + m)` with q = its code in [lo, hi]. */
function fits(
  w: Float32Array,
  at: number,
  d: number,
  m: number,
  lo: number,
  hi: number,
  codes: Int8Array,
): boolean {
  if (!Number.isFinite(d) || !Number.isFinite(m)) return false;
  for (let i = at; i < at + QUANT_BLOCK; i++) {
    const x = w[i]!;
    const q = d === 0 ? 0 : Math.round((x - m) / d);
    const y = fr(fr(q * d) + m);
    if (!(q >= lo && q <= hi) || y !== x || (y === 0 && 1 / y !== 1 / x)) return false; // bits, −0 apart
    codes[i] = q;
  }
  return true;
}

/**
 * The scale d for which the block at `at` is `fround(fround(q·d) + m)` with codes in [lo, hi] (written into
 * `codes`), trying the values near `span / steps` for each steps: its half-precision rounding (as a GGUF
 * stores d), its float32 rounding and the half-precision values either side; NaN when none fits.
 */
function scale(
  w: Float32Array,
  at: number,
  span: number,
  steps: readonly number[],
  m: number,
  lo: number,
  hi: number,
  codes: Int8Array,
): number {
  if (span === 0) return fits(w, at, 0, m, 0, 0, codes) ? 0 : NaN;
  for (const n of steps) {
    const x = span / n, h = f16(x);
    if (fits(w, at, h, m, lo, hi, codes)) return h;
    for (const d of [fr(x), f16(h * (1 - 2 ** -11)), f16(h * (1 + 2 ** -10))]) {
      if (fits(w, at, d, m, lo, hi, codes)) return d;
    }
  }
  return NaN;
}

const Q4_STEPS = [15, 14, 13], Q8_STEPS = [127, 126, 128];

/**
 * Finds d for the block at `at` and writes its m into `pair[1]` (codes into `codes`); NaN when no form fits.
 * Q4_1's form has m = the block's least value (its code is 0) and d about (max − min) / 15; Q8_0's has
 * m = −0 and d about max |w| / 127. The form of the block before (`minFirst`) is tried first: a tensor has
 * one format.
 */
function block(w: Float32Array, at: number, codes: Int8Array, minFirst: boolean, pair: Float32Array): number {
  let min = Infinity, max = -Infinity, amax = 0;
  for (let i = at; i < at + QUANT_BLOCK; i++) {
    const x = w[i]!;
    if (x < min) min = x;
    if (x > max) max = x;
    if (Math.abs(x) > amax) amax = Math.abs(x);
  }
  if (!Number.isFinite(min) || !Number.isFinite(max)) return NaN;
  for (const withMin of minFirst ? [true, false] : [false, true]) {
    const m = withMin ? fr(min) : -0;
    const d = withMin
      ? scale(w, at, max - min, Q4_STEPS, m, 0, 15, codes)
      : scale(w, at, amax, Q8_STEPS, m, -128, 127, codes);
    if (!Number.isNaN(d)) {
      pair[1] = m;
      return d;
    }
  }
  return NaN;
}

/**
 * The exact block quantisation of `w` [N,K] (see the module comment), or null when K is not a multiple of 32,
 * N not a multiple of 4, or any block's values are not such a form.
 */
export function quantBlocks(w: Float32Array, N: number, K: number): QuantBlocks | null {
  if (K === 0 || N === 0 || K % QUANT_BLOCK !== 0 || N % QUANT_QUAD !== 0 || w.length < N * K) return null;
  const codes = new Int8Array(N * K), blocks = (N * K) / QUANT_BLOCK;
  const d = new Float32Array(blocks), m = new Float32Array(blocks);
  const pair = new Float32Array(2);
  let minFirst = true;
  for (let b = 0; b < blocks; b++) {
    const scaleOf = block(w, b * QUANT_BLOCK, codes, minFirst, pair);
    if (Number.isNaN(scaleOf)) return null;
    d[b] = scaleOf;
    m[b] = pair[1]!;
    minFirst = !(pair[1] === 0 && 1 / pair[1] < 0); // a Q8_0 block's m is −0
  }
  return { codes, d, m };
}

/** Bytes of the packed layout of an [N,K] matrix. */
export function packedQuantBytes(N: number, K: number): number {
  return (N / QUANT_QUAD) * (K / QUANT_BLOCK) * QUANT_QUAD_BLOCK_BYTES;
}

/**
 * Writes the kernel's layout of `q` (an [N,K] matrix) into `out` (`packedQuantBytes` long): for each quad of
 * rows 4g…4g+3 and each block b, d of the four rows, m of the four rows (little-endian float32), then the
 * 128 codes k-major (the four rows' codes of each k).
 */
export function packQuant(q: QuantBlocks, N: number, K: number, out: Uint8Array): void {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const perRow = K / QUANT_BLOCK;
  let at = 0;
  for (let g = 0; g < N / QUANT_QUAD; g++) {
    for (let b = 0; b < perRow; b++) {
      for (let r = 0; r < QUANT_QUAD; r++) {
        const pair = (QUANT_QUAD * g + r) * perRow + b;
        view.setFloat32(at + 4 * r, q.d[pair]!, true);
        view.setFloat32(at + 16 + 4 * r, q.m[pair]!, true);
      }
      for (let k = 0; k < QUANT_BLOCK; k++) {
        for (let r = 0; r < QUANT_QUAD; r++) {
          out[at + 32 + QUANT_QUAD * k + r] = q.codes[(QUANT_QUAD * g + r) * K + b * QUANT_BLOCK + k]! & 255;
        }
      }
      at += QUANT_QUAD_BLOCK_BYTES;
    }
  }
}
