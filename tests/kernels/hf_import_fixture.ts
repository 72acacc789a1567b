/**
 * A tiny Hugging Face folder for tests: the tiny Llama of `gguf_tiny_llama.ts` as `config.json` and a
 * Hugging Face style `model.safetensors` (unsorted tensors, `__metadata__`).
 */
import { C, H, hfTensors, KVH, L, M, V } from "./gguf_tiny_llama.ts";

export const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** The tiny model's config.json as Hugging Face writes it. */
export function configJson(over: Record<string, unknown> = {}): Uint8Array {
  return enc({
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: V,
    hidden_size: C,
    intermediate_size: M,
    num_hidden_layers: L,
    num_attention_heads: H,
    num_key_value_heads: KVH,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    max_position_embeddings: 128,
    tie_word_embeddings: true,
    hidden_act: "silu",
    rope_scaling: null,
    torch_dtype: "bfloat16",
    ...over,
  });
}

export type Raw = { dtype: string; shape: number[]; bytes: Uint8Array };

/** A Hugging Face style safetensors file: tensors in the given (unsorted) order, with __metadata__. */
export function safetensors(tensors: [string, Raw][], metadata = true): Uint8Array {
  const header: Record<string, unknown> = metadata ? { __metadata__: { format: "pt" } } : {};
  let at = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.bytes.length] };
    at += t.bytes.length;
  }
  const h = enc(header);
  const out = new Uint8Array(8 + h.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(h.length), true);
  out.set(h, 8);
  let p = 8 + h.length;
  for (const [, t] of tensors) {
    out.set(t.bytes, p);
    p += t.bytes.length;
  }
  return out;
}

export function f32(shape: number[], data: Float32Array): Raw {
  return { dtype: "F32", shape, bytes: new Uint8Array(data.slice().buffer) };
}

/** The tiny model's tensors, in reverse name order so the reader cannot rely on sorting. */
export function hfFile(extra: [string, Raw][] = []): Uint8Array {
  const list = [...hfTensors()].map(([n, t]) => [n, f32(t.shape, t.data)] as [string, Raw]);
  return safetensors([...list.reverse(), ...extra]);
}
