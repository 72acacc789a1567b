/** A small trained tokenizer and codec shared by the text tests. */
import type { JsonObject } from "../../core/canonical.ts";
import { trainBpe } from "../../text/bpe_trainer.ts";
import { SMOLLM2_TEMPLATE } from "../../text/chat_template.ts";
import { buildCodec, type BuiltCodec, DEVNET_SPECIAL_TOKENS } from "../../text/codec_manifest.ts";
import { tokenizerJson } from "../../text/tokenizer_json.ts";
import { TextCodec } from "../../text/codec.ts";

/** The words the fixture corpus is made of (so fixtures built from them tokenize well with the fixture codec). */
export const FIXTURE_WORDS: readonly string[] = [
  "the",
  "answer",
  "is",
  "seven",
  "apples",
  "cost",
  "three",
  "coins",
  "reverse",
  "word",
  "count",
  "letters",
  "in",
  "banana",
  "convert",
  "metres",
  "to",
  "centimetres",
  "café",
  "naïve",
];

/** A fixed English-ish corpus with digits, punctuation and some non-ASCII. */
export function fixtureCorpus(): string {
  const words = FIXTURE_WORDS;
  let x = 2024;
  let text = "";
  for (let i = 0; i < 4000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    text += words[x % words.length]! + (x % 11 === 0 ? `${x % 1000}. ` : x % 7 === 0 ? ",\n" : " ");
  }
  return text;
}

let cached: JsonObject | undefined;
/** The fixture tokenizer.json (300 tokens). */
export function fixtureTokenizer(): JsonObject {
  cached ??= tokenizerJson(trainBpe([fixtureCorpus()], 300));
  return cached;
}

/** The fixture codec (SmolLM2 template, devnet special tokens). */
export function fixtureCodec(): BuiltCodec {
  return buildCodec(fixtureTokenizer(), SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS);
}

/** The fixture codec loaded, ready to encode and render. */
export function fixtureTextCodec(template: string = SMOLLM2_TEMPLATE): TextCodec {
  const built = buildCodec(fixtureTokenizer(), template, DEVNET_SPECIAL_TOKENS);
  return TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend, built.root);
}
