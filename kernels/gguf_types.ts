/**
 * The ggml tensor types this reader supports, with llama.cpp's block layouts: a block holds `blockSize`
 * consecutive elements of one row in `blockBytes` bytes.
 *
 * | type | id | block | bytes | layout |
 * |---|---|---|---|---|
 * | F32 | 0 | 1 | 4 | float32 |
 * | F16 | 1 | 1 | 2 | IEEE half |
 * | Q4_0 | 2 | 32 | 18 | fp16 scale d, 16 bytes of nibbles; x = (q − 8)·d |
 * | Q4_1 | 3 | 32 | 20 | fp16 scale d, fp16 min m, 16 bytes of nibbles; x = q·d + m |
 * | Q8_0 | 8 | 32 | 34 | fp16 scale d, 32 int8; x = q·d |
 * | BF16 | 30 | 1 | 2 | upper half of a float32 |
 *
 * In the nibble formats byte j holds element j in its low nibble and element j + 16 in its high nibble.
 */
import { ProtocolError } from "../core/errors.ts";

/** One supported ggml tensor type. */
export interface GgmlType {
  readonly name: string;
  readonly blockSize: number;
  readonly blockBytes: number;
}

/** ggml type ids. */
export const GGML_TYPE = { F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q8_0: 8, BF16: 30 } as const;

/** Supported types by id. */
export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map([
  [GGML_TYPE.F32, { name: "F32", blockSize: 1, blockBytes: 4 }],
  [GGML_TYPE.F16, { name: "F16", blockSize: 1, blockBytes: 2 }],
  [GGML_TYPE.Q4_0, { name: "Q4_0", blockSize: 32, blockBytes: 18 }],
  [GGML_TYPE.Q4_1, { name: "Q4_1", blockSize: 32, blockBytes: 20 }],
  [GGML_TYPE.Q8_0, { name: "Q8_0", blockSize: 32, blockBytes: 34 }],
  [GGML_TYPE.BF16, { name: "BF16", blockSize: 1, blockBytes: 2 }],
]);

/** The supported type with id `type`, or an `invalid_tensor` error naming the tensor. */
export function ggmlType(name: string, type: number): GgmlType {
  const t = GGML_TYPES.get(type);
  if (t === undefined) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot read GGUF tensor ${name}: type ${type} is not supported`,
    );
  }
  return t;
}

/** Element count of a tensor with these dims, checked to stay a safe integer. */
export function elementCount(name: string, dims: readonly number[]): number {
  let n = 1;
  for (const d of dims) {
    n *= d;
    if (!Number.isSafeInteger(n)) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot read GGUF tensor ${name}: dims [${dims}] are too large`,
      );
    }
  }
  return n;
}

/** Bytes a tensor of `type` and `dims` occupies; its rows must be whole blocks. */
export function tensorByteLength(name: string, type: number, dims: readonly number[]): number {
  const t = ggmlType(name, type);
  const rowLength = dims[0] ?? 1;
  if (rowLength % t.blockSize !== 0) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot read GGUF tensor ${name}: row length is ${rowLength}, not a multiple of the ${t.name} block ${t.blockSize}`,
    );
  }
  return (elementCount(name, dims) / t.blockSize) * t.blockBytes;
}
