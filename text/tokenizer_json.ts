/**
 * Writes a trained BPE model as a Hugging Face `tokenizer.json` (BPE model, byte-level pre-tokenizer after an
 * ASCII-digit split, ByteLevel decoder, the special tokens as added tokens, no normalizer, no post-processor,
 * padding and truncation null) that both `@huggingface/tokenizers` and the Python `tokenizers` library load.
 *
 * @example
 * ```ts
 * import { trainBpe } from "./bpe_trainer.ts";
 * import { tokenizerJson } from "./tokenizer_json.ts";
 * const json = tokenizerJson(trainBpe(["some text"], 262));
 * ```
 */
import type { JsonObject, JsonValue } from "../core/canonical.ts";
import { type BpeModel, SPECIAL_TOKENS } from "./bpe_trainer.ts";

/** The pre-tokenizer every trained tokenizer uses (see `byte_level.ts`). */
export const PRE_TOKENIZER: JsonObject = {
  type: "Sequence",
  pretokenizers: [
    { type: "Split", pattern: { Regex: "[0-9]" }, behavior: "Isolated", invert: false },
    { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
  ],
};

/** The tokenizer.json object of a trained model. */
export function tokenizerJson(model: BpeModel): JsonObject {
  const vocab: JsonObject = {};
  model.vocab.forEach((token, id) => {
    if (!Object.hasOwn(vocab, token)) vocab[token] = id;
  });
  const special = new Set<string>(SPECIAL_TOKENS);
  const added: JsonValue[] = model.vocab.flatMap((content, id) =>
    special.has(content)
      ? [{ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }]
      : []
  );
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: PRE_TOKENIZER,
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: model.merges.map(([a, b]) => [a, b]),
    },
  };
}
