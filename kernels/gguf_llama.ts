/**
 * A llama-architecture GGUF file as a Hugging Face-style Llama checkpoint: its config from the `llama.*`
 * metadata and its tensors dequantised to float32 under Hugging Face names, with the Q/K row permutation of
 * llama.cpp's converter undone (see `gguf_permute.ts`). Shapes are Hugging Face's ([out, in]); GGUF lists
 * dims fastest first, so a GGUF tensor of dims [in, out] has the same bytes as the [out, in] matrix.
 *
 * | GGUF | Hugging Face |
 * |---|---|
 * | `token_embd.weight` | `model.embed_tokens.weight` [V, C] |
 * | `blk.N.attn_norm.weight` | `model.layers.N.input_layernorm.weight` [C] |
 * | `blk.N.attn_q.weight` | `model.layers.N.self_attn.q_proj.weight` [C, C] (unpermuted over H heads) |
 * | `blk.N.attn_k.weight` | `model.layers.N.self_attn.k_proj.weight` [KV, C] (unpermuted over KVH heads) |
 * | `blk.N.attn_v.weight` | `model.layers.N.self_attn.v_proj.weight` [KV, C] |
 * | `blk.N.attn_output.weight` | `model.layers.N.self_attn.o_proj.weight` [C, C] |
 * | `blk.N.ffn_norm.weight` | `model.layers.N.post_attention_layernorm.weight` [C] |
 * | `blk.N.ffn_gate.weight` / `ffn_up` | `model.layers.N.mlp.gate_proj.weight` / `up_proj` [M, C] |
 * | `blk.N.ffn_down.weight` | `model.layers.N.mlp.down_proj.weight` [C, M] |
 * | `output_norm.weight` | `model.norm.weight` [C] |
 * | `output.weight` | absent when the head is tied to the embedding (required here) |
 *
 * @example
 * ```ts
 * import { readGguf } from "./gguf.ts";
 * import { llamaConfigFromGguf, llamaTensorsFromGguf } from "./gguf_llama.ts";
 * const file = readGguf(await Deno.readFile("SmolLM2-135M-Instruct.Q4_1.gguf"));
 * const config = llamaConfigFromGguf(file); // { hidden_size: 576, ... }
 * const tensors = llamaTensorsFromGguf(file, config); // { "model.embed_tokens.weight": {shape:[49152,576]}, ... }
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import type { Tensor } from "./tensor.ts";
import type { GgufFile } from "./gguf.ts";
import { metaNumber, metaString } from "./gguf_meta.ts";
import { dequantize } from "./gguf_dequant.ts";
import { unpermuteRows } from "./gguf_permute.ts";

/** The Llama config fields of PROTOCOL §10.1, as plain numbers (eps and θ are float64). */
export interface GgufLlamaConfig {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  rms_norm_eps: number;
  rope_theta: number;
  max_position_embeddings: number;
}

/**
 * The float64 a float32 metadata value was meant to be: the shortest decimal that rounds to it. GGUF stores
 * `rms_norm_eps = 1e-5` as the float32 9.99999974738e-6; Hugging Face's config.json says 1e-5, and this
 * returns exactly that, so both imports give the same config.
 */
export function widenFloat32(x: number): number {
  if (!Number.isFinite(x) || Math.fround(x) !== x) return x;
  for (let p = 1; p <= 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === x) return y;
  }
  return x;
}

/** Reads the Llama config from a GGUF file's `llama.*` metadata. */
export function llamaConfigFromGguf(file: GgufFile): GgufLlamaConfig {
  const arch = metaString(file, "general.architecture");
  if (arch !== "llama") throw invalidModel(`general.architecture is ${arch}, expected llama`);
  const count = (key: string): number => {
    const v = metaNumber(file, key);
    if (!Number.isSafeInteger(v) || v < 1) throw invalidModel(`${key} is ${v}, expected a positive integer`);
    return v;
  };
  const positive = (key: string): number => {
    const v = metaNumber(file, key);
    if (!Number.isFinite(v) || v <= 0) throw invalidModel(`${key} is ${v}, expected a positive number`);
    return widenFloat32(v);
  };
  const tokens = file.metadata.get("tokenizer.ggml.tokens");
  const vocab = file.metadata.has("llama.vocab_size")
    ? count("llama.vocab_size")
    : Array.isArray(tokens)
    ? tokens.length
    : count("llama.vocab_size");
  const config: GgufLlamaConfig = {
    vocab_size: vocab,
    hidden_size: count("llama.embedding_length"),
    intermediate_size: count("llama.feed_forward_length"),
    num_hidden_layers: count("llama.block_count"),
    num_attention_heads: count("llama.attention.head_count"),
    num_key_value_heads: count("llama.attention.head_count_kv"),
    rms_norm_eps: positive("llama.attention.layer_norm_rms_epsilon"),
    rope_theta: file.metadata.has("llama.rope.freq_base") ? positive("llama.rope.freq_base") : 10000,
    max_position_embeddings: count("llama.context_length"),
  };
  const { hidden_size: c, num_attention_heads: h, num_key_value_heads: kvh } = config;
  if (c % h !== 0 || (c / h) % 2 !== 0 || h % kvh !== 0) {
    throw invalidModel(`width ${c} with ${h} heads and ${kvh} KV heads is not a valid Llama shape`);
  }
  if (file.metadata.has("llama.rope.dimension_count") && count("llama.rope.dimension_count") !== c / h) {
    throw invalidModel(
      `llama.rope.dimension_count is ${count("llama.rope.dimension_count")}, expected ${c / h}`,
    );
  }
  return config;
}

/** The Hugging Face name and shape of every tensor the config implies, keyed by GGUF name. */
export function llamaTensorPlan(config: GgufLlamaConfig): Map<string, { hf: string; shape: number[] }> {
  const { vocab_size: v, hidden_size: c, intermediate_size: m } = config;
  const kv = (c / config.num_attention_heads) * config.num_key_value_heads;
  const plan = new Map<string, { hf: string; shape: number[] }>();
  plan.set("token_embd.weight", { hf: "model.embed_tokens.weight", shape: [v, c] });
  for (let n = 0; n < config.num_hidden_layers; n++) {
    const p = `model.layers.${n}.`;
    const add = (g: string, hf: string, shape: number[]) =>
      plan.set(`blk.${n}.${g}.weight`, { hf: p + hf, shape });
    add("attn_norm", "input_layernorm.weight", [c]);
    add("attn_q", "self_attn.q_proj.weight", [c, c]);
    add("attn_k", "self_attn.k_proj.weight", [kv, c]);
    add("attn_v", "self_attn.v_proj.weight", [kv, c]);
    add("attn_output", "self_attn.o_proj.weight", [c, c]);
    add("ffn_norm", "post_attention_layernorm.weight", [c]);
    add("ffn_gate", "mlp.gate_proj.weight", [m, c]);
    add("ffn_up", "mlp.up_proj.weight", [m, c]);
    add("ffn_down", "mlp.down_proj.weight", [c, m]);
  }
  plan.set("output_norm.weight", { hf: "model.norm.weight", shape: [c] });
  return plan;
}

/**
 * Dequantises every tensor of a llama GGUF file into Hugging Face names and shapes, undoing the Q/K row
 * permutation. Missing tensors are `invalid_model`, wrong shapes `invalid_tensor`; an untied `output.weight`
 * or any unexpected tensor is refused, since our model ties the head to the embedding.
 */
export function llamaTensorsFromGguf(
  file: GgufFile,
  config: GgufLlamaConfig,
  onTensor?: (done: number, total: number, name: string) => void,
): Record<string, Tensor> {
  const plan = llamaTensorPlan(config);
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  for (const name of byName.keys()) {
    if (!plan.has(name) && name !== "output.weight") {
      throw invalidModel(`tensor ${name} is not part of a Llama model`);
    }
  }
  for (const name of plan.keys()) {
    if (!byName.has(name)) throw invalidModel(`tensor ${name} is missing`);
  }
  const out: Record<string, Tensor> = {};
  let done = 0;
  for (const [name, { hf, shape }] of plan) {
    const info = byName.get(name)!;
    const hfDims = [...info.dims].reverse();
    if (hfDims.length !== shape.length || hfDims.some((d, i) => d !== shape[i])) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot import tensor ${name}: shape is [${hfDims}], expected [${shape}]`,
      );
    }
    let data = dequantize(file, info);
    if (name.endsWith(".attn_q.weight")) {
      data = unpermuteRows(data, config.num_attention_heads, config.hidden_size);
    }
    if (name.endsWith(".attn_k.weight")) {
      data = unpermuteRows(data, config.num_key_value_heads, config.hidden_size);
    }
    out[hf] = { shape, data };
    onTensor?.(++done, plan.size, name);
  }
  const head = byName.get("output.weight");
  if (head !== undefined) {
    const embed = out["model.embed_tokens.weight"]!.data;
    const w = dequantize(file, head);
    if (w.length !== embed.length || w.some((x, i) => x !== embed[i])) {
      throw invalidModel("output.weight differs from token_embd.weight, but the head must be tied");
    }
  }
  return out;
}

/** Total element count of a set of tensors. */
export function parameterCount(tensors: Record<string, Tensor>): number {
  let n = 0;
  for (const t of Object.values(tensors)) n += t.data.length;
  return n;
}

function invalidModel(detail: string): ProtocolError {
  return new ProtocolError("invalid_model", `Cannot import GGUF model: ${detail}`);
}
