/**
 * Rotary position embedding, Llama's "rotate half" form. For a head of width D (h = D/2) at position p:
 * `inv_freq[i] = fround(θ^(−2i/D))` (our `pow64`), `angle = fround(p · inv_freq[i])`, `c = cosf(angle)`,
 * `s = sinf(angle)`, and
 * `out[i] = x[i]·c − x[i+h]·s`, `out[i+h] = x[i+h]·c + x[i]·s` (each product and sum rounded to float32).
 * The backward is the transposed rotation: `dx[i] = d[i]·c + d[i+h]·s`, `dx[i+h] = d[i+h]·c − d[i]·s`.
 * Positions start at 0 in every batch row.
 *
 * @example
 * ```ts
 * import { rotaryTables, rotaryForward } from "./rotary.ts";
 * const tables = rotaryTables(4, 2, 10000); // T = 4 positions, D = 2
 * const y = rotaryForward(new Float32Array(4 * 2), tables, 1, 4, 1, 2);
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { cosf, pow64, sinf } from "./math.ts";

const fr = Math.fround;

/** cos and sin of every (position, frequency) pair: both [T, D/2]. */
export interface RotaryTables {
  readonly cos: Float32Array; // cos: [T, D/2]
  readonly sin: Float32Array; // sin: [T, D/2]
  readonly positions: number;
  readonly half: number;
}

/** The tables for positions 0 … T−1 and head width D (even) with base θ. */
export function rotaryTables(T: number, D: number, theta: number): RotaryTables {
  if (D % 2 !== 0) {
    throw new ProtocolError("invalid_model", `Cannot build rotary tables: head width is ${D}, not even`);
  }
  const half = D / 2;
  const cos = new Float32Array(T * half); // cos: [T, D/2]
  const sin = new Float32Array(T * half); // sin: [T, D/2]
  for (let i = 0; i < half; i++) {
    const invFreq = fr(pow64(theta, -(2 * i) / D));
    for (let p = 0; p < T; p++) {
      const angle = fr(p * invFreq);
      cos[p * half + i] = cosf(angle);
      sin[p * half + i] = sinf(angle);
    }
  }
  return { cos, sin, positions: T, half };
}

/**
 * Rotates x [B·T, heads·D] (row-major, position t of batch row b at b·T + t) head by head; a new array.
 * `offset` is the position of the first token (0 except when generating with a cache).
 */
export function rotaryForward(
  x: Float32Array,
  tables: RotaryTables,
  B: number,
  T: number,
  heads: number,
  D: number,
  offset = 0,
): Float32Array {
  return rotate(x, tables, B, T, heads, D, offset, 1);
}

/** The gradient of `rotaryForward`: dy [B·T, heads·D] → dx [B·T, heads·D]. */
export function rotaryBackward(
  dy: Float32Array,
  tables: RotaryTables,
  B: number,
  T: number,
  heads: number,
  D: number,
  offset = 0,
): Float32Array {
  return rotate(dy, tables, B, T, heads, D, offset, -1);
}

function rotate(
  x: Float32Array,
  tables: RotaryTables,
  B: number,
  T: number,
  heads: number,
  D: number,
  offset: number,
  direction: 1 | -1,
): Float32Array {
  const h = D / 2;
  if (h !== tables.half || offset + T > tables.positions) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot rotate: positions ${offset}..${
        offset + T
      } and head width ${D} exceed tables of ${tables.positions}×${tables.half}`,
    );
  }
  const out = new Float32Array(x.length); // out: [B·T, heads·D]
  const W = heads * D;
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const row = (b * T + t) * W;
      const tab = (offset + t) * h;
      for (let g = 0; g < heads; g++) {
        const o = row + g * D;
        for (let i = 0; i < h; i++) {
          const c = tables.cos[tab + i]!;
          const s = tables.sin[tab + i]!;
          const x1 = x[o + i]!;
          const x2 = x[o + i + h]!;
          if (direction === 1) {
            out[o + i] = fr(fr(x1 * c) - fr(x2 * s));
            out[o + i + h] = fr(fr(x2 * c) + fr(x1 * s));
          } else {
            out[o + i] = fr(fr(x1 * c) + fr(x2 * s));
            out[o + i + h] = fr(fr(x2 * c) - fr(x1 * s));
          }
        }
      }
    }
  }
  return out;
}
