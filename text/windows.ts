/**
 * Response windows (PROTOCOL §11): how a conversation becomes training rows. For every non-empty assistant
 * turn the answer is the rendered text after that turn's generation prefix, encoded, up to and including the
 * first EOS. Each answer is cut into chunks of at most `response` targets; chunks are taken round-robin by depth
 * (every turn's first chunk before any turn's second) up to `maxWindows`. A window is `prompt + target + EOS
 * padding` of length `context + response`, where the prompt is the `context` tokens just before the target
 * (prefix and earlier answer tokens); labels are -100 for the prompt and the padding and equal to the token
 * for targets. No EOS is inserted at a chunk boundary: a chunk that ends mid-answer has no EOS target.
 *
 * The prefix and the answer are encoded separately, exactly as generation sees them (the prompt is encoded on
 * its own and the model continues it).
 *
 * @example
 * ```ts
 * import { buildWindows } from "./windows.ts";
 * const doc = buildWindows(codec, messages, { context: 64, response: 64, maxWindows: 4 });
 * doc.total === doc.scored + doc.omitted;
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { MAX_RENDERED_TOKENS } from "../core/limits.ts";
import type { TextCodec } from "./codec.ts";
import { reservedStrings, validateConversation } from "./conversation.ts";

/** The label of a position that is not scored. */
export const IGNORE = -100;

/** Window settings; the defaults are the profile's. */
export interface WindowOptions {
  /** Prompt tokens before each target, at most. */
  readonly context: number;
  /** Target tokens per window, at most. */
  readonly response: number;
  /** Windows per document, at most. */
  readonly maxWindows: number;
}

/** The profile's default window settings. */
export const DEFAULT_WINDOWS: WindowOptions = { context: 64, response: 64, maxWindows: 4 };
/** The longest row (context + response). */
export const MAX_ROW_TOKENS = 256;

/** One training row. */
export interface Window {
  readonly tokens: number[];
  readonly labels: number[];
  /** Index of the assistant message this window scores. */
  readonly message: number;
  /** Which chunk of that answer (0 = first). */
  readonly depth: number;
}

/** The windows of one document and its target counts. */
export interface DocumentWindows {
  readonly windows: Window[];
  readonly total: number;
  readonly scored: number;
  readonly omitted: number;
}

/** Checks window settings; `invalid_batch` when out of bounds. */
export function checkWindowOptions(o: WindowOptions): void {
  const ok = Number.isSafeInteger(o.context) && Number.isSafeInteger(o.response) &&
    Number.isSafeInteger(o.maxWindows) && o.context >= 1 && o.response >= 1 && o.maxWindows >= 1 &&
    o.context + o.response <= MAX_ROW_TOKENS;
  if (!ok) {
    throw new ProtocolError(
      "invalid_batch",
      `Cannot cut windows: context ${o.context}, response ${o.response}, maximum ${o.maxWindows} ` +
        `(each at least 1, context + response at most ${MAX_ROW_TOKENS})`,
    );
  }
}

interface Answer {
  message: number;
  prefix: number[];
  answer: number[];
}

/** The answers of every non-empty assistant turn: prefix tokens and answer tokens up to the first EOS. */
export function answers(codec: TextCodec, messages: readonly { role: string; content: string }[]): Answer[] {
  const eos = codec.manifest.special_ids.eos;
  const eosText = codec.manifest.special_tokens.eos;
  const full = codec.render(messages, false);
  const out: Answer[] = [];
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || m.content.length === 0) return;
    const prefixText = codec.render(messages.slice(0, i), true);
    if (!full.startsWith(prefixText)) {
      throw new ProtocolError(
        "invalid_template",
        `Cannot cut windows: the generation prefix of message ${i} is not a prefix of the rendered conversation`,
      );
    }
    // Content never holds a special-token string, so the first EOS string after the prefix ends the answer, and
    // text after a special token cannot change the tokens before it: encoding up to it is enough.
    const rest = full.slice(prefixText.length);
    const cut = rest.indexOf(eosText);
    const answer = cut < 0 ? [] : codec.encode(rest.slice(0, cut + eosText.length));
    if (answer.at(-1) !== eos || answer.indexOf(eos) !== answer.length - 1) {
      throw new ProtocolError(
        "invalid_conversation",
        `Cannot cut windows: the answer of message ${i} has no EOS`,
      );
    }
    const prefix = codec.encode(prefixText);
    if (prefix.length + answer.length > MAX_RENDERED_TOKENS) {
      throw new ProtocolError(
        "too_large",
        `Cannot cut windows: message ${i} renders past ${MAX_RENDERED_TOKENS} tokens`,
      );
    }
    out.push({ message: i, prefix, answer });
  });
  return out;
}

/**
 * Cuts a validated conversation into windows. With `evaluation`, a document whose targets do not all fit is
 * rejected as `incomplete_evaluation` instead of reporting omitted targets.
 */
export function buildWindows(
  codec: TextCodec,
  value: unknown,
  options: WindowOptions = DEFAULT_WINDOWS,
  evaluation = false,
): DocumentWindows {
  checkWindowOptions(options);
  const messages = validateConversation(value, reservedStrings(codec), { generation: false });
  const turns = answers(codec, messages);
  const pad = codec.manifest.special_ids.eos;
  const width = options.context + options.response;
  const total = turns.reduce((n, t) => n + t.answer.length, 0);
  const windows: Window[] = [];
  let scored = 0;
  for (let depth = 0; windows.length < options.maxWindows; depth++) {
    let any = false;
    for (const turn of turns) {
      const start = depth * options.response;
      if (start >= turn.answer.length) continue;
      any = true;
      if (windows.length === options.maxWindows) break;
      const target = turn.answer.slice(start, start + options.response);
      const before = [...turn.prefix, ...turn.answer.slice(0, start)];
      const prompt = before.slice(Math.max(0, before.length - options.context));
      if (prompt.length === 0) {
        throw new ProtocolError(
          "invalid_template",
          `Cannot cut windows: message ${turn.message} has an empty prompt`,
        );
      }
      const tokens = [...prompt, ...target];
      const labels = [...prompt.map(() => IGNORE), ...target];
      while (tokens.length < width) {
        tokens.push(pad);
        labels.push(IGNORE);
      }
      windows.push({ tokens, labels, message: turn.message, depth });
      scored += target.length;
    }
    if (!any) break;
  }
  const omitted = total - scored;
  if (evaluation && omitted > 0) {
    throw new ProtocolError(
      "incomplete_evaluation",
      `Cannot use evaluation document: ${omitted} of ${total} targets do not fit in ${options.maxWindows} windows`,
    );
  }
  return { windows, total, scored, omitted };
}
