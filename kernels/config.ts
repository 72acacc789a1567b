/**
 * The model configuration: one small typed object, SmolLM2-compatible (Llama shape, PROTOCOL §10.1).
 *
 * In JSON (manifests, genesis) the two float fields are hex-float strings so the document stays canonical.
 *
 * @example
 * ```ts
 * import { configFromJson, configToJson, PRESETS } from "./config.ts";
 * const json = configToJson(PRESETS.devnet); // rms_norm_eps: "0x1.4f8b588e368f1p-17"
 * configFromJson(json); // the same config back
 * ```
 */
import { hasExactKeys, isObject, type JsonObject, type JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../core/hex_float.ts";

/** A Llama model's shape. */
export interface ModelConfig {
  readonly vocab_size: number; // V
  readonly hidden_size: number; // C
  readonly intermediate_size: number; // M, the MLP width
  readonly num_hidden_layers: number; // blocks
  readonly num_attention_heads: number; // H; head width D = C / H must be even (rotary pairs)
  readonly num_key_value_heads: number; // KVH, divides H (grouped-query attention)
  readonly rms_norm_eps: number; // float64, written as a hex float
  readonly rope_theta: number; // float64, written as a hex float
  readonly max_position_embeddings: number; // longest row T
}

/** Named presets: the embedded devnet model and the SmolLM2-135M shape (for imports and benchmarks). */
export const PRESETS: Readonly<Record<"devnet" | "smollm2-135m", ModelConfig>> = {
  // Small enough that a training step of 8 rows × 64 tokens takes seconds in the reference kernels.
  devnet: {
    vocab_size: 4096,
    hidden_size: 128,
    intermediate_size: 384, // 3 × C, a multiple of 32 close to SmolLM2's 8/3 ratio
    num_hidden_layers: 4,
    num_attention_heads: 4, // D = 32
    num_key_value_heads: 2,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    max_position_embeddings: 256,
  },
  "smollm2-135m": {
    vocab_size: 49152,
    hidden_size: 576,
    intermediate_size: 1536,
    num_hidden_layers: 30,
    num_attention_heads: 9, // D = 64
    num_key_value_heads: 3,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    max_position_embeddings: 8192,
  },
};

const INT_FIELDS = [
  "vocab_size",
  "hidden_size",
  "intermediate_size",
  "num_hidden_layers",
  "num_attention_heads",
  "num_key_value_heads",
  "max_position_embeddings",
] as const;
const FIELDS = [...INT_FIELDS, "rms_norm_eps", "rope_theta"];

function bad(message: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot use model config: ${message}`);
}

/** Throws `invalid_model` unless the config describes a model the kernels can run. */
export function validateConfig(c: ModelConfig): ModelConfig {
  for (const f of INT_FIELDS) {
    const v = c[f];
    if (!Number.isSafeInteger(v) || v < 1 || v > 1 << 24) {
      throw bad(`${f} is ${v}, expected an integer in 1..2^24`);
    }
  }
  if (c.hidden_size % c.num_attention_heads !== 0) {
    throw bad(
      `hidden_size ${c.hidden_size} is not a multiple of num_attention_heads ${c.num_attention_heads}`,
    );
  }
  if ((c.hidden_size / c.num_attention_heads) % 2 !== 0) {
    throw bad(`head width ${c.hidden_size / c.num_attention_heads} is odd`);
  }
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    throw bad(`num_attention_heads ${c.num_attention_heads} is not a multiple of ${c.num_key_value_heads}`);
  }
  for (const f of ["rms_norm_eps", "rope_theta"] as const) {
    if (!(Number.isFinite(c[f]) && c[f] > 0)) throw bad(`${f} is ${c[f]}, expected a positive finite number`);
  }
  return c;
}

/** The head width D = C / H. */
export function headDim(c: ModelConfig): number {
  return c.hidden_size / c.num_attention_heads;
}

/** The canonical JSON form (hex floats for eps and θ). */
export function configToJson(c: ModelConfig): JsonObject {
  validateConfig(c);
  const out: JsonObject = {};
  for (const f of INT_FIELDS) out[f] = c[f];
  out.rms_norm_eps = toHexFloat(c.rms_norm_eps);
  out.rope_theta = toHexFloat(c.rope_theta);
  return out;
}

/** Parses and validates the JSON form; `invalid_model` for missing or extra fields or bad values. */
export function configFromJson(value: JsonValue): ModelConfig {
  if (!isObject(value) || !hasExactKeys(value, FIELDS)) {
    throw bad(`fields are ${isObject(value) ? Object.keys(value).sort().join(",") : typeof value}`);
  }
  const out: Record<string, number> = {};
  for (const f of INT_FIELDS) {
    if (typeof value[f] !== "number") throw bad(`${f} is not an integer`);
    out[f] = value[f];
  }
  for (const f of ["rms_norm_eps", "rope_theta"]) {
    if (typeof value[f] !== "string") throw bad(`${f} is not a hex float`);
    try {
      out[f] = fromHexFloat(value[f]);
    } catch {
      throw bad(`${f} is ${JSON.stringify(value[f])}, not a canonical hex float`);
    }
  }
  return validateConfig(out as unknown as ModelConfig);
}
