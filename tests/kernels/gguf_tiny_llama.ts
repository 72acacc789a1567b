/**
 * A tiny Llama GGUF for tests, written as llama.cpp's converter would (F32 tensors, Q/K rows permuted, dims
 * fastest first), with the Hugging Face tensors it must import back to.
 */
import { permuteRows } from "../../kernels/gguf_permute.ts";
import { f32Bytes, type WTensor, type WValue } from "./gguf_writer.ts";

// A tiny Llama: V=4 tokens, C=64 width, 2 heads of D=32, 1 KV head (KV=32), M=8, 2 blocks.
export const V = 4, C = 64, H = 2, KVH = 1, KV = 32, M = 8, L = 2;

/** Distinct, exactly representable values so every element's destination can be checked. */
export function values(n: number, base: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => base + i / 1024);
}

export function metadata(over: Record<string, WValue> = {}): [string, WValue][] {
  const m: Record<string, WValue> = {
    "general.architecture": { t: 8, v: "llama" },
    "llama.block_count": { t: 4, v: L },
    "llama.context_length": { t: 4, v: 128 },
    "llama.embedding_length": { t: 4, v: C },
    "llama.feed_forward_length": { t: 4, v: M },
    "llama.attention.head_count": { t: 4, v: H },
    "llama.attention.head_count_kv": { t: 4, v: KVH },
    "llama.rope.freq_base": { t: 6, v: 100000 },
    "llama.attention.layer_norm_rms_epsilon": { t: 6, v: 1e-5 },
    "llama.vocab_size": { t: 4, v: V },
    "llama.rope.dimension_count": { t: 4, v: C / H },
    ...over,
  };
  return Object.entries(m);
}

/** Hugging Face tensors of the tiny model (the values our import must give back). */
export function hfTensors(): Map<string, { shape: number[]; data: Float32Array }> {
  const t = new Map<string, { shape: number[]; data: Float32Array }>();
  let base = 1;
  const add = (name: string, shape: number[]) => {
    t.set(name, { shape, data: values(shape.reduce((a, b) => a * b, 1), base++) });
  };
  add("model.embed_tokens.weight", [V, C]);
  for (let n = 0; n < L; n++) {
    const p = `model.layers.${n}.`;
    add(p + "input_layernorm.weight", [C]);
    add(p + "self_attn.q_proj.weight", [C, C]);
    add(p + "self_attn.k_proj.weight", [KV, C]);
    add(p + "self_attn.v_proj.weight", [KV, C]);
    add(p + "self_attn.o_proj.weight", [C, C]);
    add(p + "post_attention_layernorm.weight", [C]);
    add(p + "mlp.gate_proj.weight", [M, C]);
    add(p + "mlp.up_proj.weight", [M, C]);
    add(p + "mlp.down_proj.weight", [C, M]);
  }
  add("model.norm.weight", [C]);
  return t;
}

/** The GGUF tensors llama.cpp's converter would write for `hfTensors()` (F32, Q/K permuted, dims reversed). */
export function ggufTensors(): WTensor[] {
  const hf = hfTensors();
  const out: WTensor[] = [];
  const put = (name: string, from: string, heads = 0) => {
    const t = hf.get(from)!;
    const data = heads > 0 ? permuteRows(t.data, heads, C) : t.data;
    out.push({ name, dims: [...t.shape].reverse(), type: 0, data: f32Bytes(data) });
  };
  put("token_embd.weight", "model.embed_tokens.weight");
  for (let n = 0; n < L; n++) {
    const p = `model.layers.${n}.`;
    put(`blk.${n}.attn_norm.weight`, p + "input_layernorm.weight");
    put(`blk.${n}.attn_q.weight`, p + "self_attn.q_proj.weight", H);
    put(`blk.${n}.attn_k.weight`, p + "self_attn.k_proj.weight", KVH);
    put(`blk.${n}.attn_v.weight`, p + "self_attn.v_proj.weight");
    put(`blk.${n}.attn_output.weight`, p + "self_attn.o_proj.weight");
    put(`blk.${n}.ffn_norm.weight`, p + "post_attention_layernorm.weight");
    put(`blk.${n}.ffn_gate.weight`, p + "mlp.gate_proj.weight");
    put(`blk.${n}.ffn_up.weight`, p + "mlp.up_proj.weight");
    put(`blk.${n}.ffn_down.weight`, p + "mlp.down_proj.weight");
  }
  put("output_norm.weight", "model.norm.weight");
  return out;
}
