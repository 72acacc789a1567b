/**
 * Typed access to GGUF metadata: each accessor returns the value under a key with the expected type, or fails
 * with `invalid_model` naming the key and what it holds.
 *
 * @example
 * ```ts
 * import { readGguf } from "./gguf.ts";
 * import { metaNumber, metaStringArray } from "./gguf_meta.ts";
 * const file = readGguf(await Deno.readFile("model.gguf"));
 * metaNumber(file, "llama.block_count"); // 30
 * metaStringArray(file, "tokenizer.ggml.tokens").length; // 49152
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import type { GgufFile, GgufValue } from "./gguf.ts";

function invalid(detail: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot read GGUF: ${detail}`);
}

/** The metadata value under `key`, or a clear `invalid_model` error when it is absent. */
export function metaValue(file: GgufFile, key: string): GgufValue {
  const v = file.metadata.get(key);
  if (v === undefined) throw invalid(`metadata key ${key} is missing`);
  return v;
}

/** A numeric metadata value (any integer or float type) as a number. */
export function metaNumber(file: GgufFile, key: string): number {
  const v = metaValue(file, key);
  if (
    typeof v === "bigint" && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER)
  ) {
    return Number(v);
  }
  if (typeof v !== "number") throw invalid(`metadata ${key} is ${describe(v)}, expected a number`);
  return v;
}

/** A string metadata value. */
export function metaString(file: GgufFile, key: string): string {
  const v = metaValue(file, key);
  if (typeof v !== "string") throw invalid(`metadata ${key} is ${describe(v)}, expected a string`);
  return v;
}

/** A metadata array whose items are all strings. */
export function metaStringArray(file: GgufFile, key: string): string[] {
  const v = metaValue(file, key);
  if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
    throw invalid(`metadata ${key} is ${describe(v)}, expected an array of strings`);
  }
  return v as string[];
}

/** A metadata array whose items are all numbers (integer types up to 32 bits). */
export function metaNumberArray(file: GgufFile, key: string): number[] {
  const v = metaValue(file, key);
  if (!Array.isArray(v) || !v.every((x) => typeof x === "number")) {
    throw invalid(`metadata ${key} is ${describe(v)}, expected an array of numbers`);
  }
  return v as number[];
}

function describe(v: GgufValue): string {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}
