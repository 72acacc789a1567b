/**
 * The devnet text codec: a 4,096-piece tokenizer trained on the rendered text of the generator's first rows,
 * bound with the SmolLM2 chat template and the ChatML special tokens. Everything is a pure function of the
 * data source, so every node that builds it gets the same codec root.
 *
 * @example
 * ```ts
 * import { buildDevnetCodec } from "./codec.ts";
 * import { DEVNET_SOURCE } from "./generator.ts";
 * const { codec, tokenizer } = buildDevnetCodec(DEVNET_SOURCE);
 * codec.root; // the devnet tokenizer_root
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { trainBpe } from "../../text/bpe_trainer.ts";
import { checkTemplate, SMOLLM2_TEMPLATE } from "../../text/chat_template.ts";
import { buildCodec, type BuiltCodec, DEVNET_SPECIAL_TOKENS } from "../../text/codec_manifest.ts";
import { renderTemplate } from "../../text/template_render.ts";
import { tokenizerJson } from "../../text/tokenizer_json.ts";
import { type DataSource, devnetRow } from "./generator.ts";

/** The devnet vocabulary size. */
export const DEVNET_VOCAB = 4096;
/** The root `buildDevnetCodec(DEVNET_SOURCE)` gives (pinned; a change here is a change of the devnet's identity). */
export const DEVNET_CODEC_ROOT = "b7609bfa81044187b7ebbed7230e8297ba2b3f043d8bdf058992db61308735ed";
/** How many of the first rows train the devnet tokenizer. */
export const DEVNET_TOKENIZER_ROWS = 10_000;

/** The rendered text of rows 0 .. rows-1 (what the tokenizer is trained on). */
export function devnetCorpus(source: DataSource, rows: number = DEVNET_TOKENIZER_ROWS): string[] {
  const template = checkTemplate(SMOLLM2_TEMPLATE);
  const t = DEVNET_SPECIAL_TOKENS;
  return Array.from({ length: rows }, (_, i) =>
    renderTemplate(template, {
      messages: devnetRow(source, i),
      add_generation_prompt: false,
      bos_token: t.bos,
      eos_token: t.eos,
      pad_token: t.pad,
      unk_token: t.unk,
    }));
}

/** Trains the devnet tokenizer and builds its codec; fails if the corpus cannot fill the vocabulary. */
export function buildDevnetCodec(
  source: DataSource,
  rows: number = DEVNET_TOKENIZER_ROWS,
  vocab: number = DEVNET_VOCAB,
): { codec: BuiltCodec; tokenizer: JsonObject } {
  const model = trainBpe(devnetCorpus(source, rows), vocab);
  if (model.vocab.length !== vocab) {
    throw new ProtocolError(
      "invalid_tokenizer",
      `Cannot build the devnet tokenizer: ${rows} rows give ${model.vocab.length} pieces, expected ${vocab}`,
    );
  }
  const tokenizer = tokenizerJson(model);
  return { codec: buildCodec(tokenizer, SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS), tokenizer };
}
