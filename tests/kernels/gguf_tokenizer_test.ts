import assert from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { ProtocolError } from "../../core/errors.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { tokenizerFromGguf } from "../../kernels/gguf_tokenizer.ts";
import { writeGguf, type WValue } from "./gguf_writer.ts";

const TOKENS = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>", // 0-2 control
  "H",
  "e",
  "l",
  "o",
  "Ġ",
  "w",
  "r",
  "d",
  "1",
  "2", // 3-12 bytes as byte-level characters
  "He",
  "ll",
  "llo",
  "Hello",
  "Ġw",
  "or",
  "Ġwor",
  "Ġworl",
  "Ġworld", // 13-21 merged
];
const MERGES = ["H e", "l l", "ll o", "He llo", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d"];
const TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}";

const strings = (xs: string[]): WValue => ({ t: 9, item: 8, v: xs.map((v) => ({ t: 8, v })) });
const ints = (xs: number[]): WValue => ({ t: 9, item: 5, v: xs.map((v) => ({ t: 5, v })) });

function gguf(over: Record<string, WValue | null> = {}): Uint8Array {
  const m: Record<string, WValue | null> = {
    "tokenizer.ggml.model": { t: 8, v: "gpt2" },
    "tokenizer.ggml.pre": { t: 8, v: "smollm" },
    "tokenizer.ggml.tokens": strings(TOKENS),
    "tokenizer.ggml.token_type": ints(TOKENS.map((_, i) => (i < 3 ? 3 : 1))),
    "tokenizer.ggml.merges": strings(MERGES),
    "tokenizer.ggml.bos_token_id": { t: 4, v: 1 },
    "tokenizer.ggml.eos_token_id": { t: 4, v: 2 },
    "tokenizer.ggml.unknown_token_id": { t: 4, v: 0 },
    "tokenizer.ggml.padding_token_id": { t: 4, v: 2 },
    "tokenizer.ggml.add_bos_token": { t: 7, v: false },
    "tokenizer.chat_template": { t: 8, v: TEMPLATE },
    ...over,
  };
  return writeGguf({ metadata: Object.entries(m).filter((e): e is [string, WValue] => e[1] !== null) });
}

Deno.test("a GGUF byte-level BPE tokenizer becomes a tokenizer.json that @huggingface/tokenizers encodes with", () => {
  const t = tokenizerFromGguf(readGguf(gguf()));
  assert.equal(t.chatTemplate, TEMPLATE);
  assert.deepEqual(t.special, {
    bos: "<|im_start|>",
    eos: "<|im_end|>",
    pad: "<|im_end|>",
    unk: "<|endoftext|>",
  });
  assert.deepEqual(t.specialIds, { bos: 1, eos: 2, pad: 2, unk: 0 });
  assert.deepEqual(
    t.tokenizer.added_tokens,
    [0, 1, 2].map((id) => ({
      id,
      content: TOKENS[id],
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
  );
  const tk = new Tokenizer(t.tokenizer, {});
  assert.deepEqual(tk.encode("Hello world").ids, [16, 21]);
  assert.deepEqual(tk.encode("<|im_start|>Hello<|im_end|>").ids, [1, 16, 2]);
  // Every number character is its own pre-token (llama.cpp's smollm \p{N} split).
  assert.deepEqual(tk.encode("12").ids, [11, 12]);
  assert.equal(
    tk.decode([1, 16, 21, 2], { skip_special_tokens: false }),
    "<|im_start|>Hello world<|im_end|>",
  );
});

Deno.test("a missing padding id falls back to the eos token and user-defined tokens are added as non-special", () => {
  const types = TOKENS.map((_, i) => (i < 3 ? 3 : i === 16 ? 4 : 1));
  const t = tokenizerFromGguf(readGguf(gguf({
    "tokenizer.ggml.padding_token_id": null,
    "tokenizer.ggml.token_type": ints(types),
  })));
  assert.deepEqual(t.specialIds, { bos: 1, eos: 2, pad: 2, unk: 0 });
  const added = t.tokenizer.added_tokens as { id: number; special: boolean }[];
  assert.deepEqual(added.map((a) => [a.id, a.special]), [[0, true], [1, true], [2, true], [16, false]]);
});

Deno.test("tokenizers that cannot be rebuilt faithfully are refused as invalid_tokenizer with the reason", () => {
  const cases: [Record<string, WValue | null>, string][] = [
    [
      { "tokenizer.ggml.model": { t: 8, v: "llama" } },
      "tokenizer.ggml.model is llama, expected gpt2 (byte-level BPE)",
    ],
    [{ "tokenizer.ggml.pre": { t: 8, v: "qwen2" } }, "tokenizer.ggml.pre is qwen2, supported: smollm"],
    [
      { "tokenizer.ggml.add_bos_token": { t: 7, v: true } },
      "tokenizer.ggml.add_bos_token is true, codecs add no BOS",
    ],
    [
      { "tokenizer.ggml.token_type": ints([3, 3, 3]) },
      "tokenizer.ggml.token_type has 3 entries for 22 tokens",
    ],
    [
      { "tokenizer.ggml.tokens": strings([...TOKENS.slice(0, 21), "He"]) },
      'token "He" appears twice (ids 13 and 21)',
    ],
    [
      { "tokenizer.ggml.token_type": ints(TOKENS.map((_, i) => (i < 3 ? 3 : i === 5 ? 6 : 1))) },
      'token 5 "l" has type 6, expected 1 (normal), 3 (control) or 4 (user-defined)',
    ],
    [{ "tokenizer.ggml.merges": strings(["H e", "x y"]) }, 'merge 1 "x y" uses "x", not in the vocabulary'],
    [
      { "tokenizer.ggml.merges": strings(["H  e"]) },
      'merge 0 "H  e" is not two tokens separated by one space',
    ],
    [{ "tokenizer.ggml.merges": strings(["e H"]) }, 'merge 0 "e H" makes a token not in the vocabulary'],
    [{ "tokenizer.ggml.bos_token_id": { t: 4, v: 3 } }, 'bos token "H" (id 3) is not a control token'],
    [{ "tokenizer.ggml.eos_token_id": { t: 4, v: 99 } }, "eos token id is 99, outside the vocabulary of 22"],
  ];
  for (const [over, detail] of cases) {
    const bytes = gguf(over);
    const copy = bytes.slice();
    const file = readGguf(bytes);
    assert.throws(() => tokenizerFromGguf(file), (e: unknown) => {
      assert.ok(e instanceof ProtocolError);
      assert.equal(e.code, "invalid_tokenizer");
      assert.equal(e.message, `Cannot rebuild tokenizer from GGUF: ${detail}`);
      return true;
    }, detail);
    assert.deepEqual(bytes, copy);
  }
});
