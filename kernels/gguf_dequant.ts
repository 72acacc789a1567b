/**
 * Dequantisation of GGUF tensor data to float32, exactly as llama.cpp's `dequantize_row_*` functions: every
 * product of a quant and its fp16 scale is exact in float32, and Q4_1 adds the min with one float32 rounding.
 * Non-finite results are refused (`non_finite_tensor`), as everywhere in the kernels.
 *
 * @example
 * ```ts
 * import { readGguf, findTensor } from "./gguf.ts";
 * import { dequantize } from "./gguf_dequant.ts";
 * const file = readGguf(bytes);
 * const w = dequantize(file, findTensor(file, "blk.0.attn_q.weight")); // Float32Array of 576·576
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import type { GgufFile, GgufTensorInfo } from "./gguf.ts";
import { elementCount, GGML_TYPE, ggmlType } from "./gguf_types.ts";
import { sharedFloat32 } from "./tensor.ts";

const HALF = new Float32Array(65536);
for (let h = 0; h < 65536; h++) HALF[h] = halfToFloat(h);

/** The float value of IEEE binary16 bits (exact: every half is a float32). */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero and subnormals
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1024 + frac) * 2 ** (exp - 25);
}

/** Decodes one tensor of `file` to a row-major Float32Array of its element count. */
export function dequantize(file: GgufFile, info: GgufTensorInfo): Float32Array {
  const n = elementCount(info.name, info.dims);
  const t = ggmlType(info.name, info.type);
  const expected = (n / t.blockSize) * t.blockBytes;
  if (info.byteLength !== expected || info.offset + expected > file.bytes.length) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot dequantise tensor ${info.name}: data is ${info.byteLength} bytes at ${info.offset}, expected ${expected}`,
    );
  }
  const src = file.bytes.subarray(info.offset, info.offset + expected);
  const out = decode(info.type, src, n);
  for (let i = 0; i < n; i++) {
    if (!Number.isFinite(out[i]!)) {
      throw new ProtocolError(
        "non_finite_tensor",
        `Cannot dequantise tensor ${info.name}: element ${i} is ${out[i]}`,
      );
    }
  }
  return out;
}

/** Decodes `n` elements of ggml type `type` from `src` (which holds exactly their blocks). */
export function decode(type: number, src: Uint8Array, n: number): Float32Array {
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const out = sharedFloat32(n); // a model's parameters: the training step's task workers read them in place
  switch (type) {
    case GGML_TYPE.F32:
      for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
      return out;
    case GGML_TYPE.F16:
      for (let i = 0; i < n; i++) out[i] = HALF[view.getUint16(2 * i, true)]!;
      return out;
    case GGML_TYPE.BF16:
      for (let i = 0; i < n; i++) out[i] = bf16(view.getUint16(2 * i, true));
      return out;
    case GGML_TYPE.Q8_0:
      for (let b = 0, o = 0; o < n; b += 34, o += 32) {
        const d = HALF[view.getUint16(b, true)]!;
        for (let j = 0; j < 32; j++) out[o + j] = view.getInt8(b + 2 + j) * d;
      }
      return out;
    case GGML_TYPE.Q4_0:
      for (let b = 0, o = 0; o < n; b += 18, o += 32) {
        const d = HALF[view.getUint16(b, true)]!;
        for (let j = 0; j < 16; j++) {
          const q = src[b + 2 + j]!;
          out[o + j] = ((q & 0x0f) - 8) * d;
          out[o + j + 16] = ((q >> 4) - 8) * d;
        }
      }
      return out;
    case GGML_TYPE.Q4_1:
      for (let b = 0, o = 0; o < n; b += 20, o += 32) {
        const d = HALF[view.getUint16(b, true)]!;
        const m = HALF[view.getUint16(b + 2, true)]!;
        for (let j = 0; j < 16; j++) {
          const q = src[b + 4 + j]!;
          // (q·d) is exact in float32; the sum is rounded once when stored, as in llama.cpp.
          out[o + j] = (q & 0x0f) * d + m;
          out[o + j + 16] = (q >> 4) * d + m;
        }
      }
      return out;
    default:
      throw new ProtocolError("invalid_tensor", `Cannot dequantise: type ${type} is not supported`);
  }
}

const BF16_VIEW = new DataView(new ArrayBuffer(4));
/** A bfloat16 is the upper 16 bits of a float32. */
function bf16(bits: number): number {
  BF16_VIEW.setUint32(0, bits << 16, true);
  return BF16_VIEW.getFloat32(0, true);
}
