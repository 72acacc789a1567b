import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { readGguf } from "../../kernels/gguf.ts";
import {
  llamaConfigFromGguf,
  llamaTensorsFromGguf,
  parameterCount,
  widenFloat32,
} from "../../kernels/gguf_llama.ts";
import { permuteRows } from "../../kernels/gguf_permute.ts";
import { concat, f32Bytes, u16Bytes, writeGguf, type WTensor, type WValue } from "./gguf_writer.ts";

// A tiny Llama: V=4 tokens, C=64 width, 2 heads of D=32, 1 KV head (KV=32), M=8, 2 blocks.
const V = 4, C = 64, H = 2, KVH = 1, KV = 32, M = 8, L = 2;

/** Distinct, exactly representable values so every element's destination can be checked. */
function values(n: number, base: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => base + i / 1024);
}

function metadata(over: Record<string, WValue> = {}): [string, WValue][] {
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
function hfTensors(): Map<string, { shape: number[]; data: Float32Array }> {
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
function ggufTensors(): WTensor[] {
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

function importBytes(bytes: Uint8Array) {
  const file = readGguf(bytes);
  return llamaTensorsFromGguf(file, llamaConfigFromGguf(file));
}

function refused(bytes: Uint8Array, code: string, message: string) {
  const copy = bytes.slice();
  assert.throws(() => importBytes(bytes), (e: unknown) => {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.code, code);
    assert.equal(e.message, message);
    return true;
  });
  assert.deepEqual(bytes, copy, "the input bytes are unchanged");
}

Deno.test("the config comes from llama.* metadata, with float32 eps widened to the decimal it was written as", () => {
  const file = readGguf(writeGguf({ metadata: metadata() }));
  assert.deepEqual(llamaConfigFromGguf(file), {
    vocab_size: 4,
    hidden_size: 64,
    intermediate_size: 8,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rms_norm_eps: 1e-5,
    rope_theta: 100000,
    max_position_embeddings: 128,
  });
  assert.equal(widenFloat32(Math.fround(1e-5)), 1e-5);
  assert.equal(widenFloat32(Math.fround(0.1)), 0.1);
  assert.equal(widenFloat32(0.1), 0.1, "a float64 that is not a float32 stays as it is");
});

Deno.test("every GGUF tensor lands under its Hugging Face name and shape, Q and K rows unpermuted", () => {
  const tensors = importBytes(writeGguf({ metadata: metadata(), tensors: ggufTensors() }));
  const expected = hfTensors();
  assert.deepEqual(Object.keys(tensors).sort(), [...expected.keys()].sort());
  for (const [name, t] of expected) {
    assert.deepEqual(tensors[name]!.shape, t.shape, name);
    assert.deepEqual(tensors[name]!.data, t.data, name);
  }
  assert.equal(parameterCount(tensors), V * C + L * (2 * C + 2 * C * C + 2 * KV * C + 3 * M * C) + C);
});

Deno.test("quantised tensors are dequantised on import", () => {
  const tensors = ggufTensors();
  // token_embd as Q8_0: each of the V rows of 64 is two blocks with scale 0.5 and quants 0..31.
  const block = concat(u16Bytes([0x3800]), Uint8Array.from({ length: 32 }, (_, j) => j));
  tensors[0] = {
    name: "token_embd.weight",
    dims: [C, V],
    type: 8,
    data: concat(...Array(2 * V).fill(block)),
  };
  const out = importBytes(writeGguf({ metadata: metadata(), tensors }));
  const row = [
    ...Array.from({ length: 32 }, (_, j) => j * 0.5),
    ...Array.from({ length: 32 }, (_, j) => j * 0.5),
  ];
  assert.deepEqual([...out["model.embed_tokens.weight"]!.data], [...row, ...row, ...row, ...row]);
});

Deno.test("a tied output.weight equal to the embedding is accepted and an untied one is refused", () => {
  const tensors = ggufTensors();
  const embed = tensors[0]!;
  const tied = importBytes(
    writeGguf({ metadata: metadata(), tensors: [...tensors, { ...embed, name: "output.weight" }] }),
  );
  assert.equal(Object.keys(tied).length, 1 + 9 * L + 1);
  const other = { ...embed, name: "output.weight", data: f32Bytes(values(V * C, 99)) };
  refused(
    writeGguf({ metadata: metadata(), tensors: [...tensors, other] }),
    "invalid_model",
    "Cannot import GGUF model: output.weight differs from token_embd.weight, but the head must be tied",
  );
});

Deno.test("a missing tensor is refused as invalid_model naming it", () => {
  const tensors = ggufTensors().filter((t) => t.name !== "blk.1.ffn_up.weight");
  refused(
    writeGguf({ metadata: metadata(), tensors }),
    "invalid_model",
    "Cannot import GGUF model: tensor blk.1.ffn_up.weight is missing",
  );
});

Deno.test("a tensor of the wrong shape is refused as invalid_tensor with both shapes", () => {
  const tensors = ggufTensors().map((t) => t.name === "blk.0.attn_k.weight" ? { ...t, dims: [KV, C] } : t);
  refused(
    writeGguf({ metadata: metadata(), tensors }),
    "invalid_tensor",
    "Cannot import tensor blk.0.attn_k.weight: shape is [64,32], expected [32,64]",
  );
});

Deno.test("an unexpected tensor is refused rather than silently dropped", () => {
  const extra = { name: "rope_freqs.weight", dims: [16], type: 0, data: f32Bytes(values(16, 0)) };
  refused(
    writeGguf({ metadata: metadata(), tensors: [...ggufTensors(), extra] }),
    "invalid_model",
    "Cannot import GGUF model: tensor rope_freqs.weight is not part of a Llama model",
  );
});

Deno.test("a non-llama architecture, a bad head split and a wrong rope dimension are refused", () => {
  const cases: [Record<string, WValue>, string][] = [
    [{ "general.architecture": { t: 8, v: "qwen2" } }, "general.architecture is qwen2, expected llama"],
    [
      { "llama.attention.head_count_kv": { t: 4, v: 3 } },
      "width 64 with 2 heads and 3 KV heads is not a valid Llama shape",
    ],
    [{ "llama.rope.dimension_count": { t: 4, v: 16 } }, "llama.rope.dimension_count is 16, expected 32"],
    [{ "llama.block_count": { t: 4, v: 0 } }, "llama.block_count is 0, expected a positive integer"],
    [
      { "llama.attention.layer_norm_rms_epsilon": { t: 6, v: -1 } },
      "llama.attention.layer_norm_rms_epsilon is -1, expected a positive number",
    ],
  ];
  for (const [over, detail] of cases) {
    refused(
      writeGguf({ metadata: metadata(over), tensors: ggufTensors() }),
      "invalid_model",
      `Cannot import GGUF model: ${detail}`,
    );
  }
});
