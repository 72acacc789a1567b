/**
 * The row permutation llama.cpp's `convert_hf_to_gguf.py` applies to the Q and K projections, and its inverse.
 *
 * The converter turns Hugging Face's rotate-half rotary layout (the pair of element i is i + D/2) into
 * llama.cpp's interleaved layout (pairs are adjacent) by permuting the output rows of `q_proj` and `k_proj`:
 *
 * ```python
 * def permute(w, n_head):  # w: [n_head·D, C]
 *     return w.reshape(n_head, 2, D // 2, C).swapaxes(1, 2).reshape(w.shape)
 * ```
 *
 * So GGUF row `h·D + 2i + s` holds Hugging Face row `h·D + s·D/2 + i` (s ∈ {0, 1}, i < D/2). `unpermuteRows`
 * undoes it, giving back the layout our rotate-half RoPE expects; `permuteRows` is the converter's direction
 * (used by tests and by anyone writing GGUF).
 */
import { ProtocolError } from "../core/errors.ts";
import { sharedFloat32 } from "./tensor.ts";

function check(data: Float32Array, heads: number, cols: number, what: string): number {
  const rows = data.length / cols;
  if (!Number.isInteger(rows) || heads < 1 || rows % heads !== 0 || (rows / heads) % 2 !== 0) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot ${what} rows: ${data.length} values in rows of ${cols} do not split into ${heads} heads of even width`,
    );
  }
  return rows / heads;
}

/** Moves GGUF (interleaved) rows back to Hugging Face (rotate-half) order; `data` is [heads·D, cols]. */
export function unpermuteRows(data: Float32Array, heads: number, cols: number): Float32Array {
  return moveRows(data, heads, cols, "unpermute");
}

/** The converter's permutation: Hugging Face rows to GGUF rows; `data` is [heads·D, cols]. */
export function permuteRows(data: Float32Array, heads: number, cols: number): Float32Array {
  return moveRows(data, heads, cols, "permute");
}

/**
 * Within each head, Hugging Face row `s·D/2 + i` is GGUF row `2i + s` (s = 0, 1): "permute" moves rows from
 * the first order to the second, "unpermute" back.
 */
function moveRows(
  data: Float32Array,
  heads: number,
  cols: number,
  what: "permute" | "unpermute",
): Float32Array {
  const d = check(data, heads, cols, what);
  const half = d / 2;
  const out = sharedFloat32(data.length); // a model's parameters, as `decode` gives them
  for (let h = 0; h < heads; h++) {
    for (let s = 0; s < 2; s++) {
      for (let i = 0; i < half; i++) {
        const hf = h * d + s * half + i;
        const gguf = h * d + 2 * i + s;
        const [from, to] = what === "permute" ? [hf, gguf] : [gguf, hf];
        out.set(data.subarray(from * cols, (from + 1) * cols), to * cols);
      }
    }
  }
  return out;
}
