import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { readGguf } from "../../kernels/gguf.ts";
import {
  llamaConfigFromGguf,
  llamaTensorsFromGguf,
  parameterCount,
  widenFloat32,
} from "../../kernels/gguf_llama.ts";
import { concat, f32Bytes, u16Bytes, writeGguf, type WValue } from "./gguf_writer.ts";
import { C, ggufTensors, hfTensors, KV, L, M, metadata, V, values } from "./gguf_tiny_llama.ts";

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
