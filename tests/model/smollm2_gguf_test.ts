import assert from "node:assert/strict";
import { readGguf } from "../../kernels/gguf.ts";
import { metaNumber, metaNumberArray, metaString, metaStringArray } from "../../kernels/gguf_meta.ts";
import { llamaConfigFromGguf, llamaTensorsFromGguf, parameterCount } from "../../kernels/gguf_llama.ts";
import { SMOLLM2_PIN, smollm2File } from "./smollm2_file.ts";

const file = await smollm2File();
const gguf = file.path === null ? null : readGguf(await Deno.readFile(file.path));

Deno.test({
  name: "SmolLM2's GGUF metadata describes the 30-block llama with its tokenizer and chat template",
  ignore: gguf === null,
  fn: () => {
    const f = gguf!;
    assert.equal(f.version, 3);
    assert.equal(f.alignment, 32);
    assert.equal(f.tensors.length, 272);
    assert.equal(metaString(f, "general.architecture"), "llama");
    assert.deepEqual(llamaConfigFromGguf(f), {
      vocab_size: 49152,
      hidden_size: 576,
      intermediate_size: 1536,
      num_hidden_layers: 30,
      num_attention_heads: 9,
      num_key_value_heads: 3,
      rms_norm_eps: 1e-5,
      rope_theta: 100000,
      max_position_embeddings: 8192,
    });
    assert.equal(metaString(f, "tokenizer.ggml.model"), "gpt2");
    assert.equal(metaString(f, "tokenizer.ggml.pre"), "smollm");
    const tokens = metaStringArray(f, "tokenizer.ggml.tokens");
    assert.equal(tokens.length, 49152);
    assert.deepEqual(tokens.slice(0, 3), ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]);
    assert.equal(metaNumberArray(f, "tokenizer.ggml.token_type").length, 49152);
    const merges = metaStringArray(f, "tokenizer.ggml.merges");
    assert.equal(merges.length, 48900);
    assert.equal(merges[0], "Ġ t");
    assert.deepEqual(
      ["bos", "eos", "unknown", "padding"].map((k) => metaNumber(f, `tokenizer.ggml.${k}_token_id`)),
      [1, 2, 0, 2],
    );
    assert.equal(
      metaString(f, "tokenizer.chat_template"),
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
        "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}" +
        "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}" +
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
    );
  },
});

Deno.test({
  name:
    "SmolLM2's tensors are Q8_0 embedding, Q4_1 matrices and F32 norms, all dequantising to finite values",
  ignore: gguf === null,
  fn: () => {
    const f = gguf!;
    const types = new Map<number, number>();
    for (const t of f.tensors) types.set(t.type, (types.get(t.type) ?? 0) + 1);
    assert.deepEqual([...types.entries()].sort((a, b) => a[0] - b[0]), [[0, 61], [3, 210], [8, 1]]);
    assert.equal(f.tensors.find((t) => t.name === "output.weight"), undefined, "the head is tied");
    const tensors = llamaTensorsFromGguf(f, llamaConfigFromGguf(f));
    assert.equal(parameterCount(tensors), SMOLLM2_PIN.parameters);
    assert.equal(parameterCount(tensors), 134_515_008);
    assert.deepEqual(tensors["model.embed_tokens.weight"]!.shape, [49152, 576]);
    assert.deepEqual(tensors["model.layers.29.self_attn.k_proj.weight"]!.shape, [192, 576]);
    assert.deepEqual(tensors["model.layers.0.mlp.down_proj.weight"]!.shape, [576, 1536]);
    for (const [name, t] of Object.entries(tensors)) {
      assert.ok(t.data.every(Number.isFinite), `${name} is finite`);
    }
  },
});
