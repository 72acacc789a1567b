/**
 * A Hugging Face Llama checkpoint folder as our model, bytes in: `config.json` (a tied `LlamaForCausalLM`
 * without rope scaling or biases), `model.safetensors` (one file; F32, BF16 or F16 tensors under Hugging
 * Face names, any order, `__metadata__` allowed), `tokenizer.json` and `tokenizer_config.json` (chat template
 * and the special tokens). Files can be checked against pinned SHA-256 values first. Tensors are grouped into
 * components exactly as a GGUF import is (`gguf_model.ts`), so both imports of the same weights give the
 * same model root.
 *
 * @example
 * ```ts
 * import { modelFromHf } from "./hf_import.ts";
 * const model = modelFromHf(await Deno.readFile("dir/config.json"), await Deno.readFile("dir/model.safetensors"));
 * ```
 */
import { isObject, type JsonObject } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { type ModelConfig, validateConfig } from "./config.ts";
import { halfToFloat } from "./gguf_dequant.ts";
import { groupComponents } from "./gguf_model.ts";
import type { Model } from "./model.ts";
import type { Tensor } from "./tensor.ts";

/** The files of a Hugging Face folder this import reads. */
export const HF_FILES = [
  "config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
] as const;

function bad(code: "invalid_model" | "invalid_tensor" | "invalid_tokenizer", detail: string): ProtocolError {
  return new ProtocolError(code, `Cannot import Hugging Face model: ${detail}`);
}

function json(bytes: Uint8Array, what: string, code: "invalid_model" | "invalid_tokenizer"): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw bad(code, `${what} is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObject(value)) throw bad(code, `${what} is not a JSON object`);
  return value;
}

/** Throws `invalid_model` naming the first file whose SHA-256 differs from its pin. */
export function checkPins(
  files: Readonly<Record<string, Uint8Array>>,
  pins: Readonly<Record<string, string>>,
): void {
  for (const [name, pinned] of Object.entries(pins)) {
    const bytes = files[name];
    if (bytes === undefined) throw bad("invalid_model", `pinned file ${name} is not read by the import`);
    const actual = sha256Hex(bytes);
    if (actual !== pinned) throw bad("invalid_model", `${name} has SHA-256 ${actual}, pinned ${pinned}`);
  }
}

/** Reads and checks `config.json`: a tied Llama with SiLU, no rope scaling, no biases. */
export function configFromHf(bytes: Uint8Array): ModelConfig {
  const j = json(bytes, "config.json", "invalid_model");
  const expect = (key: string, ok: (v: unknown) => boolean, want: string) => {
    if (!ok(j[key])) {
      throw bad("invalid_model", `config.json ${key} is ${JSON.stringify(j[key])}, expected ${want}`);
    }
  };
  expect("model_type", (v) => v === "llama", '"llama"');
  expect("tie_word_embeddings", (v) => v === true, "true (the head is tied to the embedding)");
  expect("hidden_act", (v) => v === undefined || v === "silu", '"silu"');
  expect("rope_scaling", (v) => v === undefined || v === null, "null");
  expect("attention_bias", (v) => v === undefined || v === false, "false");
  expect("mlp_bias", (v) => v === undefined || v === false, "false");
  const num = (key: string, fallback?: number): number => {
    const v = j[key] ?? fallback;
    if (typeof v !== "number") {
      throw bad("invalid_model", `config.json ${key} is ${JSON.stringify(j[key])}, expected a number`);
    }
    return v;
  };
  const heads = num("num_attention_heads");
  const config = validateConfig({
    vocab_size: num("vocab_size"),
    hidden_size: num("hidden_size"),
    intermediate_size: num("intermediate_size"),
    num_hidden_layers: num("num_hidden_layers"),
    num_attention_heads: heads,
    num_key_value_heads: num("num_key_value_heads", heads),
    rms_norm_eps: num("rms_norm_eps"),
    rope_theta: num("rope_theta", 10000),
    max_position_embeddings: num("max_position_embeddings"),
  });
  if (j.head_dim !== undefined && j.head_dim !== null && j.head_dim !== config.hidden_size / heads) {
    throw bad(
      "invalid_model",
      `config.json head_dim is ${j.head_dim}, expected ${config.hidden_size / heads}`,
    );
  }
  return config;
}

const DTYPES: Record<string, number> = { F32: 4, BF16: 2, F16: 2 };
const SCRATCH = new DataView(new ArrayBuffer(4));

/** Reads a Hugging Face safetensors file (any tensor order, `__metadata__` allowed) into float32 tensors. */
export function readHfSafetensors(bytes: Uint8Array): Record<string, Tensor> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 8) throw bad("invalid_tensor", `model.safetensors is ${bytes.length} bytes`);
  const n = Number(view.getBigUint64(0, true));
  if (n < 2 || n > 100 * 1024 * 1024 || 8 + n > bytes.length) {
    throw bad(
      "invalid_tensor",
      `model.safetensors header length is ${n} for a file of ${bytes.length} bytes`,
    );
  }
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch {
    throw bad("invalid_tensor", "model.safetensors header is not JSON");
  }
  if (!isObject(header)) throw bad("invalid_tensor", "model.safetensors header is not an object");
  const data = 8 + n;
  const out: Record<string, Tensor> = {};
  const spans: [number, number, string][] = [];
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    if (
      !isObject(info) || typeof info.dtype !== "string" || !Array.isArray(info.shape) ||
      !Array.isArray(info.data_offsets)
    ) {
      throw bad("invalid_tensor", `tensor ${name} has a malformed entry`);
    }
    const size = DTYPES[info.dtype];
    if (size === undefined) {
      throw bad("invalid_tensor", `tensor ${name} has dtype ${info.dtype}, expected F32, BF16 or F16`);
    }
    const shape = info.shape as number[];
    const count = shape.reduce((a, b) => a * b, 1);
    const begin = Number(info.data_offsets[0]), end = Number(info.data_offsets[1]);
    if (
      !shape.every((d) => Number.isSafeInteger(d) && d >= 1) || info.data_offsets.length !== 2 ||
      !Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || begin < 0 ||
      end - begin !== count * size ||
      data + end > bytes.length
    ) {
      throw bad(
        "invalid_tensor",
        `tensor ${name} has shape [${shape}] and offsets [${begin},${end}] that do not fit`,
      );
    }
    spans.push([begin, end, name]);
    const values = new Float32Array(count);
    const at = data + begin;
    for (let i = 0; i < count; i++) {
      if (info.dtype === "F32") values[i] = view.getFloat32(at + 4 * i, true);
      else if (info.dtype === "F16") values[i] = halfToFloat(view.getUint16(at + 2 * i, true));
      else {
        SCRATCH.setUint32(0, view.getUint16(at + 2 * i, true) << 16, true);
        values[i] = SCRATCH.getFloat32(0, true);
      }
    }
    const nonFinite = values.findIndex((x) => !Number.isFinite(x));
    if (nonFinite >= 0) {
      throw new ProtocolError(
        "non_finite_tensor",
        `Cannot import tensor ${name}: element ${nonFinite} is ${values[nonFinite]}`,
      );
    }
    out[name] = { shape: [...shape], data: values };
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i]![0] < spans[i - 1]![1]) {
      throw bad("invalid_tensor", `tensors ${spans[i - 1]![2]} and ${spans[i]![2]} overlap`);
    }
  }
  return out;
}

/** A model from `config.json` and `model.safetensors` bytes; a tied `lm_head.weight` must equal the embedding. */
export function modelFromHf(configBytes: Uint8Array, safetensorsBytes: Uint8Array): Model {
  const config = configFromHf(configBytes);
  const tensors = readHfSafetensors(safetensorsBytes);
  const head = tensors["lm_head.weight"];
  if (head !== undefined) {
    const embed = tensors["model.embed_tokens.weight"]?.data;
    if (
      embed === undefined || head.data.length !== embed.length || head.data.some((x, i) => x !== embed[i])
    ) {
      throw bad(
        "invalid_model",
        "lm_head.weight differs from model.embed_tokens.weight, but the head must be tied",
      );
    }
    delete tensors["lm_head.weight"];
  }
  return { config, components: groupComponents(config, tensors) };
}

/** The tokenizer.json object, chat template and special tokens of a Hugging Face folder. */
export function tokenizerFromHf(tokenizerBytes: Uint8Array, tokenizerConfigBytes: Uint8Array): {
  tokenizer: JsonObject;
  chatTemplate: string;
  special: { bos: string; eos: string; pad: string; unk: string };
} {
  const tokenizer = json(tokenizerBytes, "tokenizer.json", "invalid_tokenizer");
  const cfg = json(tokenizerConfigBytes, "tokenizer_config.json", "invalid_tokenizer");
  if (typeof cfg.chat_template !== "string") {
    throw bad("invalid_tokenizer", "tokenizer_config.json has no chat_template string");
  }
  const token = (key: string): string => {
    const v = cfg[key];
    const s = isObject(v) ? v.content : v;
    if (typeof s !== "string") {
      throw bad("invalid_tokenizer", `tokenizer_config.json ${key} is ${JSON.stringify(v)}`);
    }
    return s;
  };
  return {
    tokenizer,
    chatTemplate: cfg.chat_template,
    special: {
      bos: token("bos_token"),
      eos: token("eos_token"),
      pad: token("pad_token"),
      unk: token("unk_token"),
    },
  };
}
