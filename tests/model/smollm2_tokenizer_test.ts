import assert from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { readGguf } from "../../kernels/gguf.ts";
import { tokenizerFromGguf } from "../../kernels/gguf_tokenizer.ts";
import type { JsonValue } from "../../core/canonical.ts";
import { TextCodec } from "../../text/codec.ts";
import { buildCodec } from "../../text/codec_manifest.ts";
import { encodePrompt } from "../../text/conversation.ts";
import { smollm2File } from "./smollm2_file.ts";
import { llamaReference, PROBES } from "./oracle/oracle.ts";

const file = await smollm2File();
const oracle = await llamaReference(file.path);
const rebuilt = file.path === null ? null : tokenizerFromGguf(readGguf(await Deno.readFile(file.path)));
const tokenizer = rebuilt === null ? null : new Tokenizer(rebuilt.tokenizer, {});

Deno.test({
  name: "the tokenizer rebuilt from SmolLM2's GGUF has its vocabulary, merges and special roles",
  ignore: rebuilt === null,
  fn: () => {
    const t = rebuilt!;
    const model = t.tokenizer.model as { vocab: Record<string, number>; merges: string[][] };
    assert.equal(Object.keys(model.vocab).length, 49152);
    assert.equal(model.merges.length, 48900);
    assert.deepEqual(model.merges[0], ["Ġ", "t"]);
    assert.equal((t.tokenizer.added_tokens as unknown[]).length, 17);
    assert.deepEqual(t.special, {
      bos: "<|im_start|>",
      eos: "<|im_end|>",
      pad: "<|im_end|>",
      unk: "<|endoftext|>",
    });
    assert.deepEqual(t.specialIds, { bos: 1, eos: 2, pad: 2, unk: 0 });
    // "Hello world" as llama.cpp (through node-llama-cpp 3.21.1) tokenises it.
    assert.deepEqual(tokenizer!.encode("Hello world").ids, [19556, 905]);
  },
});

Deno.test({
  name: "the rebuilt tokenizer gives llama.cpp's ids on the eight conformance probes, eight more and a chat",
  ignore: oracle.ref === null || tokenizer === null,
  fn: () => {
    const ref = oracle.ref!;
    assert.deepEqual(ref.probes.map((p) => p.text), PROBES.probes);
    assert.equal(ref.probes.length, 16);
    for (const { text, ids } of [...ref.probes, ref.chat]) {
      assert.deepEqual(tokenizer!.encode(text).ids, ids, JSON.stringify(text));
      assert.equal(tokenizer!.decode(ids, { skip_special_tokens: false }), text, JSON.stringify(text));
    }
    assert.deepEqual(ref.hello_world, [19556, 905]);
    assert.deepEqual(tokenizer!.encode(PROBES.logits_text).ids.slice(0, 64), ref.prompt);
  },
});

Deno.test({
  name:
    "SmolLM2's codec renders a one-question chat to the prompt llama.cpp was given and encodes it to the same ids",
  ignore: oracle.ref === null || rebuilt === null,
  fn: () => {
    const built = buildCodec(rebuilt!.tokenizer, rebuilt!.chatTemplate, rebuilt!.special);
    const codec = TextCodec.fromParts(built.manifest as unknown as JsonValue, built.backend, built.root);
    const messages = [{ role: "user", content: "What is the capital of France?" }];
    assert.equal(codec.render(messages, true), PROBES.chat);
    assert.deepEqual(encodePrompt(codec, messages), oracle.ref!.chat.ids);
    assert.equal(codec.manifest.vocabulary, 49152);
    assert.deepEqual(codec.manifest.special_ids, { bos: 1, eos: 2, pad: 2, unk: 0 });
  },
});
