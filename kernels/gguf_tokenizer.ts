/**
 * Rebuilds a Hugging Face `tokenizer.json` from a GGUF file's `tokenizer.ggml.*` metadata, so that a model
 * fetched as GGUF gets the same text codec (PROTOCOL §11) as one imported from a Hugging Face folder. Only
 * what llama.cpp calls the `gpt2` tokenizer model (byte-level BPE) with the `smollm` pre-tokenizer is
 * supported; anything else is refused with `invalid_tokenizer` rather than guessed.
 *
 * - vocabulary: `tokenizer.ggml.tokens` (index = id); merges: `tokenizer.ggml.merges` ("a b" → ["a", "b"]);
 * - `tokenizer.ggml.token_type` 3 (control) → special added tokens, 4 (user-defined) → non-special added
 *   tokens, 1 (normal) → plain vocabulary;
 * - pre-tokenizer `smollm` is llama.cpp's regex pair `\p{N}` then the GPT-2 pattern: each number character is
 *   isolated, then byte-level splitting without a prefix space. (`Split` on `\p{N}` is used instead of HF's
 *   `Digits` because `@huggingface/tokenizers` implements `Digits` with ASCII-only `\d`.)
 * - special roles from `tokenizer.ggml.{bos,eos,padding,unknown}_token_id`, chat template from
 *   `tokenizer.chat_template`.
 *
 * @example
 * ```ts
 * import { readGguf } from "./gguf.ts";
 * import { tokenizerFromGguf } from "./gguf_tokenizer.ts";
 * const t = tokenizerFromGguf(readGguf(bytes));
 * t.special; // { bos: "<|im_start|>", eos: "<|im_end|>", pad: "<|im_end|>", unk: "<|endoftext|>" }
 * ```
 */
import type { JsonObject, JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import type { GgufFile } from "./gguf.ts";
import { metaNumber, metaNumberArray, metaString, metaStringArray } from "./gguf_meta.ts";

/** The tokenizer of a GGUF file as a Hugging Face tokenizer.json plus what a text codec needs beside it. */
export interface GgufTokenizer {
  /** The tokenizer.json object (padding and truncation null). */
  readonly tokenizer: JsonObject;
  readonly chatTemplate: string;
  readonly special: {
    readonly bos: string;
    readonly eos: string;
    readonly pad: string;
    readonly unk: string;
  };
  readonly specialIds: {
    readonly bos: number;
    readonly eos: number;
    readonly pad: number;
    readonly unk: number;
  };
}

/** Pre-tokenizers by llama.cpp's `tokenizer.ggml.pre` name. */
export const GGUF_PRE_TOKENIZERS: Readonly<Record<string, JsonObject>> = {
  smollm: {
    type: "Sequence",
    pretokenizers: [
      { type: "Split", pattern: { Regex: "\\p{N}" }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    ],
  },
};

const CONTROL = 3;
const USER_DEFINED = 4;
const NORMAL = 1;

function bad(detail: string): ProtocolError {
  return new ProtocolError("invalid_tokenizer", `Cannot rebuild tokenizer from GGUF: ${detail}`);
}

function flag(file: GgufFile, key: string): boolean {
  const v = file.metadata.get(key);
  if (v === undefined) return false;
  if (typeof v !== "boolean") throw bad(`${key} is ${String(v)}, expected a bool`);
  return v;
}

/** Reads the tokenizer of a GGUF file; every inconsistency is `invalid_tokenizer`. */
export function tokenizerFromGguf(file: GgufFile): GgufTokenizer {
  const model = metaString(file, "tokenizer.ggml.model");
  if (model !== "gpt2") throw bad(`tokenizer.ggml.model is ${model}, expected gpt2 (byte-level BPE)`);
  const preName = metaString(file, "tokenizer.ggml.pre");
  const pre = GGUF_PRE_TOKENIZERS[preName];
  if (pre === undefined) {
    throw bad(`tokenizer.ggml.pre is ${preName}, supported: ${Object.keys(GGUF_PRE_TOKENIZERS).join(", ")}`);
  }
  if (flag(file, "tokenizer.ggml.add_bos_token")) {
    throw bad("tokenizer.ggml.add_bos_token is true, codecs add no BOS");
  }
  if (flag(file, "tokenizer.ggml.add_eos_token")) {
    throw bad("tokenizer.ggml.add_eos_token is true, codecs add no EOS");
  }
  if (flag(file, "tokenizer.ggml.add_space_prefix")) throw bad("tokenizer.ggml.add_space_prefix is true");

  const tokens = metaStringArray(file, "tokenizer.ggml.tokens");
  const types = metaNumberArray(file, "tokenizer.ggml.token_type");
  if (types.length !== tokens.length) {
    throw bad(`tokenizer.ggml.token_type has ${types.length} entries for ${tokens.length} tokens`);
  }
  const vocab: JsonObject = {};
  const added: JsonValue[] = [];
  tokens.forEach((token, id) => {
    if (token === "") throw bad(`token ${id} is empty`);
    if (Object.hasOwn(vocab, token)) {
      throw bad(`token ${JSON.stringify(token)} appears twice (ids ${vocab[token]} and ${id})`);
    }
    vocab[token] = id;
    const type = types[id]!;
    if (type === CONTROL || type === USER_DEFINED) {
      const special = type === CONTROL;
      added.push({
        id,
        content: token,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special,
      });
    } else if (type !== NORMAL) {
      throw bad(
        `token ${id} ${
          JSON.stringify(token)
        } has type ${type}, expected 1 (normal), 3 (control) or 4 (user-defined)`,
      );
    }
  });

  const merges = metaStringArray(file, "tokenizer.ggml.merges").map((merge, i) => {
    const parts = merge.split(" ");
    if (parts.length !== 2 || parts[0] === "" || parts[1] === "") {
      throw bad(`merge ${i} ${JSON.stringify(merge)} is not two tokens separated by one space`);
    }
    for (const part of parts) {
      if (!Object.hasOwn(vocab, part)) {
        throw bad(`merge ${i} ${JSON.stringify(merge)} uses ${JSON.stringify(part)}, not in the vocabulary`);
      }
    }
    if (!Object.hasOwn(vocab, parts[0]! + parts[1]!)) {
      throw bad(`merge ${i} ${JSON.stringify(merge)} makes a token not in the vocabulary`);
    }
    return parts as JsonValue;
  });

  const role = (key: string): [string, number] => {
    const id = metaNumber(file, `tokenizer.ggml.${key}_token_id`);
    const token = tokens[id];
    if (!Number.isInteger(id) || token === undefined) {
      throw bad(`${key} token id is ${id}, outside the vocabulary of ${tokens.length}`);
    }
    if (types[id] !== CONTROL) {
      throw bad(`${key} token ${JSON.stringify(token)} (id ${id}) is not a control token`);
    }
    return [token, id];
  };
  const [bos, bosId] = role("bos");
  const [eos, eosId] = role("eos");
  const [unk, unkId] = role("unknown");
  const [pad, padId] = file.metadata.has("tokenizer.ggml.padding_token_id") ? role("padding") : [eos, eosId];

  return {
    tokenizer: {
      version: "1.0",
      truncation: null,
      padding: null,
      added_tokens: added,
      normalizer: null,
      pre_tokenizer: pre,
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
        merges,
      },
    },
    chatTemplate: metaString(file, "tokenizer.chat_template"),
    special: { bos, eos, pad, unk },
    specialIds: { bos: bosId, eos: eosId, pad: padId, unk: unkId },
  };
}
