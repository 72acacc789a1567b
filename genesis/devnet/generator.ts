/**
 * The devnet's data source: a deterministic generator of chat conversations addressable by row. Row i is
 * computed directly from (generator version, seed, i); the same three always give the same conversation in
 * every process. About half the rows are single-turn and half are two-turn (a follow-up that builds on the
 * first answer, or two independent questions); one row in eight starts with a system message.
 *
 * @example
 * ```ts
 * import { devnetRow, DEVNET_SOURCE } from "./generator.ts";
 * const messages = devnetRow(DEVNET_SOURCE, 12345); // [{role:"user",...},{role:"assistant",...}, ...]
 * ```
 */
import type { ChatMessage } from "../../text/template_render.ts";
import { type Exchange, FAMILIES, followUp } from "./families.ts";
import { rowRandom } from "./prng.ts";

/** The generator version: changes whenever any row's content would change. */
export const GENERATOR_VERSION = "neuroshard-devnet-chat-v1";

/** A pinned data source: generator version and seed. */
export interface DataSource {
  readonly generator: string;
  readonly seed: string;
}

/** The devnet's pinned source. */
export const DEVNET_SOURCE: DataSource = { generator: GENERATOR_VERSION, seed: "devnet-0" };

const SYSTEM_PROMPTS = [
  "You are a concise assistant. Answer with the result only.",
  "Answer exactly and briefly.",
  "You are a careful tutor who checks every answer.",
] as const;

/** The shape of a row, for statistics and tests. */
export interface RowInfo {
  readonly families: string[];
  readonly kind: "single" | "follow_up" | "two_questions";
  readonly system: boolean;
}

/** The conversation of `row` and how it was made. */
export function devnetRowInfo(source: DataSource, row: number): { messages: ChatMessage[]; info: RowInfo } {
  if (source.generator !== GENERATOR_VERSION) {
    throw new Error(
      `Cannot generate rows: generator is ${source.generator}, this build is ${GENERATOR_VERSION}`,
    );
  }
  const r = rowRandom(source.generator, source.seed, row);
  const messages: ChatMessage[] = [];
  const system = r.below(8) === 0;
  if (system) messages.push({ role: "system", content: r.pick(SYSTEM_PROMPTS) });
  const first = r.pick(FAMILIES);
  const exchange = first.draw(r);
  push(messages, exchange);
  const shape = r.below(4);
  if (shape < 2) return { messages, info: { families: [first.name], kind: "single", system } };
  if (shape === 2) {
    push(messages, followUp(exchange, r));
    return { messages, info: { families: [first.name, "follow_up"], kind: "follow_up", system } };
  }
  const second = r.pick(FAMILIES);
  push(messages, second.draw(r));
  return { messages, info: { families: [first.name, second.name], kind: "two_questions", system } };
}

/** The conversation of `row` under `source`. */
export function devnetRow(source: DataSource, row: number): ChatMessage[] {
  return devnetRowInfo(source, row).messages;
}

/** Rows `start` .. `start + count - 1`. */
export function devnetRows(source: DataSource, start: number, count: number): ChatMessage[][] {
  return Array.from({ length: count }, (_, i) => devnetRow(source, start + i));
}

function push(messages: ChatMessage[], exchange: Exchange): void {
  messages.push({ role: "user", content: exchange.question }, {
    role: "assistant",
    content: exchange.answer,
  });
}
