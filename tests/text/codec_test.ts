import assert from "node:assert/strict";
import { evalScript } from "../_eval.ts";
import { canonicalBytes, type JsonObject } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { trainBpe } from "../../text/bpe_trainer.ts";
import { SMOLLM2_TEMPLATE } from "../../text/chat_template.ts";
import { loadCodec, storeCodec, TextCodec } from "../../text/codec.ts";
import { buildCodec, CODEC_RUNTIME, DEVNET_SPECIAL_TOKENS } from "../../text/codec_manifest.ts";
import { tokenizerJson } from "../../text/tokenizer_json.ts";
import { fixtureCodec, fixtureCorpus, fixtureTokenizer } from "./_fixture.ts";

function isCode(code: string, text?: RegExp) {
  return (e: unknown) =>
    e instanceof ProtocolError && e.code === code && (text === undefined || text.test(e.message));
}

async function withStore<T>(fn: (store: ObjectStore, dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "codec-" });
  try {
    return await fn(new ObjectStore(`${dir}/objects`), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a stored codec loads by its root, which is the id of its manifest", async () => {
  await withStore(async (store) => {
    const built = fixtureCodec();
    assert.equal(built.root, id(built.manifest as unknown as JsonObject));
    assert.equal(await storeCodec(store, built), built.root);
    const codec = await loadCodec(store, built.root);
    assert.equal(codec.root, built.root);
    assert.deepEqual(codec.manifest.special_ids, { bos: 1, eos: 2, pad: 2, unk: 0 });
    assert.equal(codec.manifest.vocabulary, 300);
    assert.deepEqual(codec.manifest.runtime, {
      templates: "nunjucks@3.2.4",
      tokenizers: "@huggingface/tokenizers@0.2.0",
    });
    assert.equal(codec.manifest.decode_cleanup, false);
  });
});

Deno.test("the runtime versions in the manifest equal the npm versions pinned in deno.json", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url))) as {
    imports: Record<string, string>;
  };
  assert.equal(config.imports["@huggingface/tokenizers"], `npm:${CODEC_RUNTIME.tokenizers}`);
  assert.equal(config.imports["nunjucks"], `npm:${CODEC_RUNTIME.templates}`);
});

Deno.test("encode adds no special tokens, maps special strings to their ids, and decode is exact", () => {
  const built = fixtureCodec();
  const codec = TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend, built.root);
  assert.deepEqual(codec.encode(""), []);
  assert.equal(codec.decode([]), "");
  const text = "Hello , world . I 'm here ! the answer is 42 ?";
  assert.equal(codec.decode(codec.encode(text)), text);
  const ids = codec.encode("<|im_start|>user\nhi<|im_end|>");
  assert.equal(ids[0], 1);
  assert.equal(ids.at(-1), 2);
  assert.equal(codec.decode(ids), "<|im_start|>user\nhi<|im_end|>");
  assert.throws(
    () => codec.decode([300]),
    isCode("invalid_tokenizer", /token id 300: the vocabulary has 300 ids/),
  );
  assert.throws(() => codec.decode([-1]), isCode("invalid_tokenizer"));
});

Deno.test("streaming decode holds back an incomplete UTF-8 character instead of printing U+FFFD", () => {
  const built = fixtureCodec();
  const codec = TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend);
  const ids = codec.encode("a🙂b");
  assert.equal(ids.length, 6); // "a", four single-byte tokens of the emoji, "b"
  assert.equal(codec.decode([ids[1]!]), "\ufffd");
  const stream = codec.streamDecoder();
  assert.deepEqual(ids.map((t) => stream.push(t)), ["a", "", "", "", "🙂", "b"]);
  assert.equal(stream.end(), "");
  const cut = codec.streamDecoder();
  cut.push(ids[1]!);
  assert.equal(cut.end(), "\ufffd");
});

Deno.test("streaming decode equals whole decode on random id sequences", () => {
  const built = fixtureCodec();
  const codec = TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend);
  let x = 99;
  for (let trial = 0; trial < 200; trial++) {
    const ids: number[] = [];
    for (let i = 0; i < 1 + (trial % 17); i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      ids.push(x % 300);
    }
    const stream = codec.streamDecoder();
    const streamed = ids.map((t) => stream.push(t)).join("") + stream.end();
    assert.equal(streamed, codec.decode(ids), `seed 99 trial ${trial}: ${ids}`);
  }
});

Deno.test("the codec root changes with the vocabulary, a special token or the template, and not otherwise", () => {
  const base = fixtureCodec().root;
  assert.equal(fixtureCodec().root, base);
  // Padding, truncation and key order are canonicalised away.
  const noisy = {
    ...fixtureTokenizer(),
    padding: { strategy: "BatchLongest" },
    truncation: { max_length: 9 },
  };
  assert.equal(buildCodec(noisy, SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS).root, base);
  const otherVocab = tokenizerJson(trainBpe([fixtureCorpus()], 299));
  assert.notEqual(buildCodec(otherVocab, SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS).root, base);
  const otherPad = { ...DEVNET_SPECIAL_TOKENS, pad: "<|endoftext|>" };
  assert.notEqual(buildCodec(fixtureTokenizer(), SMOLLM2_TEMPLATE, otherPad).root, base);
  assert.notEqual(buildCodec(fixtureTokenizer(), SMOLLM2_TEMPLATE + " ", DEVNET_SPECIAL_TOKENS).root, base);
});

Deno.test("the codec root is equal across two processes", async () => {
  const script = `
    import { fixtureCodec } from "./tests/text/_fixture.ts";
    console.log(fixtureCodec().root);`;
  assert.equal((await evalScript(script)).trim(), fixtureCodec().root);
});

Deno.test("loading refuses a different root, another runtime, a mismatched backend and unknown special tokens", async () => {
  const built = fixtureCodec();
  const manifest = built.manifest as unknown as JsonObject;
  const other = "ab".repeat(32);
  assert.throws(
    () => TextCodec.fromParts(manifest, built.backend, other),
    isCode("codec_mismatch", /has root/),
  );
  const oldRuntime = {
    ...manifest,
    runtime: { templates: "nunjucks@3.2.3", tokenizers: CODEC_RUNTIME.tokenizers },
  };
  assert.throws(
    () => TextCodec.fromParts(oldRuntime, built.backend),
    isCode("codec_mismatch", /nunjucks@3.2.3/),
  );
  const otherBackend = canonicalBytes({ ...fixtureTokenizer(), normalizer: { type: "NFC" } });
  assert.throws(
    () => TextCodec.fromParts(manifest, otherBackend),
    isCode("codec_mismatch", /backend hashes to/),
  );
  assert.throws(
    () => TextCodec.fromParts({ ...manifest, decode_cleanup: true }, built.backend),
    isCode("invalid_tokenizer"),
  );
  assert.throws(
    () => TextCodec.fromParts({ ...manifest, vocabulary: 301 }, built.backend),
    isCode("invalid_tokenizer", /the backend has 300 ids, the manifest says 301/),
  );
  assert.throws(
    () => buildCodec(fixtureTokenizer(), SMOLLM2_TEMPLATE, { ...DEVNET_SPECIAL_TOKENS, unk: "<unk>" }),
    isCode("invalid_tokenizer", /unk token "<unk>"/),
  );
  assert.throws(
    () => buildCodec(fixtureTokenizer(), "{{ messages }}", DEVNET_SPECIAL_TOKENS),
    isCode("invalid_template"),
  );
  await withStore(async (store, dir) => {
    await storeCodec(store, built);
    await assert.rejects(loadCodec(store, other), isCode("object_not_found"));
    await Deno.writeFile(store.pathOf(built.manifest.backend), new TextEncoder().encode("{}"));
    await assert.rejects(loadCodec(store, built.root), isCode("object_corrupt"));
    assert.ok(dir.length > 0);
  });
});
