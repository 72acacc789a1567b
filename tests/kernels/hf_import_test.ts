import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { sha256Hex } from "../../core/digest.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import {
  checkPins,
  configFromHf,
  modelFromHf,
  readHfSafetensors,
  tokenizerFromHf,
} from "../../kernels/hf_import.ts";
import { writeGguf } from "./gguf_writer.ts";
import { C, ggufTensors, hfTensors, L, M, metadata } from "./gguf_tiny_llama.ts";
import { configJson, enc, f32, hfFile, type Raw, safetensors } from "./hf_import_fixture.ts";

function refused(fn: () => unknown, code: string, message: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ProtocolError);
    assert.equal(e.code, code);
    assert.equal(e.message, message);
    return true;
  });
}

Deno.test("a Hugging Face folder gives the same components as the GGUF of the same weights", () => {
  const hf = modelFromHf(configJson(), hfFile());
  const gguf = modelFromGguf(readGguf(writeGguf({ metadata: metadata(), tensors: ggufTensors() })));
  assert.deepEqual(hf.config, gguf.config);
  assert.deepEqual(hf.components, gguf.components);
});

Deno.test("BF16 and F16 tensors are widened exactly and a tied lm_head equal to the embedding is dropped", () => {
  const t = readHfSafetensors(safetensors([
    ["b", {
      dtype: "BF16",
      shape: [3],
      bytes: new Uint8Array(new Uint16Array([0x3f80, 0xc0a0, 0x0001]).buffer),
    }],
    ["h", { dtype: "F16", shape: [2], bytes: new Uint8Array(new Uint16Array([0x3c00, 0x0001]).buffer) }],
  ]));
  assert.deepEqual([...t.b!.data], [1, -5, 2 ** -133]);
  assert.deepEqual([...t.h!.data], [1, 2 ** -24]);
  const embed = hfTensors().get("model.embed_tokens.weight")!;
  const tied = modelFromHf(configJson(), hfFile([["lm_head.weight", f32(embed.shape, embed.data)]]));
  assert.equal(Object.keys(tied.components).length, 2 + L);
  const other = embed.data.map((x) => x + 1);
  refused(
    () => modelFromHf(configJson(), hfFile([["lm_head.weight", f32(embed.shape, other)]])),
    "invalid_model",
    "Cannot import Hugging Face model: lm_head.weight differs from model.embed_tokens.weight, but the head must be tied",
  );
});

Deno.test("config.json outside a tied plain Llama is refused naming the field", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ model_type: "mistral" }, 'config.json model_type is "mistral", expected "llama"'],
    [
      { tie_word_embeddings: false },
      "config.json tie_word_embeddings is false, expected true (the head is tied to the embedding)",
    ],
    [
      { rope_scaling: { type: "linear", factor: 2 } },
      'config.json rope_scaling is {"type":"linear","factor":2}, expected null',
    ],
    [{ hidden_act: "gelu" }, 'config.json hidden_act is "gelu", expected "silu"'],
    [{ head_dim: 16 }, "config.json head_dim is 16, expected 32"],
    [{ hidden_size: "64" }, 'config.json hidden_size is "64", expected a number'],
  ];
  for (const [over, detail] of cases) {
    refused(
      () => configFromHf(configJson(over)),
      "invalid_model",
      `Cannot import Hugging Face model: ${detail}`,
    );
  }
  refused(
    () => configFromHf(new TextEncoder().encode("{")),
    "invalid_model",
    "Cannot import Hugging Face model: config.json is not JSON: Expected property name or '}' in JSON at position 1 (line 1 column 2)",
  );
});

Deno.test("malformed safetensors, wrong shapes and missing tensors are refused", () => {
  const one = f32([2], new Float32Array([1, 2]));
  const overlap = safetensors([["a", one], ["b", one]]);
  // Point b at a's bytes.
  const from = new TextEncoder().encode('"data_offsets":[8,16]');
  const at = overlap.findIndex((_, i) => from.every((b, j) => overlap[i + j] === b));
  const forged = overlap.slice();
  forged.set(new TextEncoder().encode('"data_offsets":[4,12]'), at); // same length, so the header stays valid
  refused(
    () => readHfSafetensors(forged),
    "invalid_tensor",
    "Cannot import Hugging Face model: tensors a and b overlap",
  );
  refused(
    () => readHfSafetensors(safetensors([["a", { dtype: "I64", shape: [1], bytes: new Uint8Array(8) }]])),
    "invalid_tensor",
    "Cannot import Hugging Face model: tensor a has dtype I64, expected F32, BF16 or F16",
  );
  refused(
    () => readHfSafetensors(safetensors([["a", { dtype: "F32", shape: [3], bytes: new Uint8Array(8) }]])),
    "invalid_tensor",
    "Cannot import Hugging Face model: tensor a has shape [3] and offsets [0,8] that do not fit",
  );
  refused(
    () => readHfSafetensors(safetensors([["a", f32([1], new Float32Array([NaN]))]])),
    "non_finite_tensor",
    "Cannot import tensor a: element 0 is NaN",
  );
  refused(
    () => readHfSafetensors(new Uint8Array(4)),
    "invalid_tensor",
    "Cannot import Hugging Face model: model.safetensors is 4 bytes",
  );
  const wrong = [...hfTensors()].map(([n, t]) =>
    [n, n === "model.layers.1.mlp.down_proj.weight" ? f32([M, C], t.data) : f32(t.shape, t.data)] as [
      string,
      Raw,
    ]
  );
  refused(
    () => modelFromHf(configJson(), safetensors(wrong)),
    "invalid_tensor",
    `Cannot group model: tensor model.layers.1.mlp.down_proj.weight has shape [${M},${C}], expected [${C},${M}]`,
  );
  const missing = [...hfTensors()].filter(([n]) => n !== "model.norm.weight").map(([n, t]) =>
    [n, f32(t.shape, t.data)] as [string, Raw]
  );
  refused(
    () => modelFromHf(configJson(), safetensors(missing)),
    "invalid_model",
    "Cannot group model: tensor model.norm.weight is missing",
  );
});

Deno.test("pinned SHA-256 values are checked per file before anything is read", () => {
  const files = { "config.json": configJson() };
  checkPins(files, { "config.json": sha256Hex(files["config.json"]) });
  refused(
    () => checkPins(files, { "config.json": "0".repeat(64) }),
    "invalid_model",
    `Cannot import Hugging Face model: config.json has SHA-256 ${sha256Hex(files["config.json"])}, pinned ${
      "0".repeat(64)
    }`,
  );
  refused(
    () => checkPins(files, { "vocab.txt": "0".repeat(64) }),
    "invalid_model",
    "Cannot import Hugging Face model: pinned file vocab.txt is not read by the import",
  );
});

Deno.test("tokenizer_config.json gives the chat template and special tokens, as strings or {content} objects", () => {
  const t = tokenizerFromHf(
    enc({ version: "1.0", model: { type: "BPE" } }),
    enc({
      chat_template: "{{ x }}",
      bos_token: "<|im_start|>",
      eos_token: { content: "<|im_end|>", special: true },
      pad_token: "<|im_end|>",
      unk_token: "<|endoftext|>",
    }),
  );
  assert.deepEqual(t.special, {
    bos: "<|im_start|>",
    eos: "<|im_end|>",
    pad: "<|im_end|>",
    unk: "<|endoftext|>",
  });
  assert.equal(t.chatTemplate, "{{ x }}");
  refused(
    () => tokenizerFromHf(enc({}), enc({ bos_token: "a" })),
    "invalid_tokenizer",
    "Cannot import Hugging Face model: tokenizer_config.json has no chat_template string",
  );
  refused(
    () =>
      tokenizerFromHf(enc({}), enc({ chat_template: "", bos_token: "a", eos_token: "b", pad_token: null })),
    "invalid_tokenizer",
    "Cannot import Hugging Face model: tokenizer_config.json pad_token is null",
  );
});
