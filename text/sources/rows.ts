/**
 * One row of a chat source: its `messages` as a list of `{role, content}` strings, as both readers give it.
 * The row's conversation rules (roles alternating, no special-token strings, bounds) are checked later, when
 * it is cut into windows; here only its shape is.
 */
import { ProtocolError } from "../../core/errors.ts";
import type { ChatMessage } from "../template_render.ts";

/** Checks the `messages` value of row `row` of source `source`; `invalid_source` when it is not a message list. */
export function rowMessages(value: unknown, source: string, row: number): ChatMessage[] {
  if (!Array.isArray(value)) {
    throw new ProtocolError(
      "invalid_source",
      `Cannot read row ${row} of source ${source}: messages is ${
        value === null ? "null" : typeof value
      }, expected a list`,
    );
  }
  return value.map((m: unknown, i: number) => {
    const ok = typeof m === "object" && m !== null && !Array.isArray(m) &&
      Object.keys(m).sort().join(",") === "content,role" &&
      typeof (m as ChatMessage).role === "string" && typeof (m as ChatMessage).content === "string";
    if (!ok) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read row ${row} of source ${source}: message ${i} is not exactly {role, content} strings`,
      );
    }
    return { role: (m as ChatMessage).role, content: (m as ChatMessage).content };
  });
}
