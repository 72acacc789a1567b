/**
 * A source row as a corpus document (PROTOCOL §11 "Pinned sources"): its raw object is the canonical JSON of
 * `{"messages": …}` (so its root is `id({messages})`), its text is every message as `role` and `content` on their own lines (so the id sees who said
 * what), its id is the corpus-hygiene id of that text and its SimHash the hygiene SimHash, so copies that
 * differ only in case, Unicode form or whitespace share an id.
 *
 * @example
 * ```ts
 * import { rowDocument } from "./document.ts";
 * const doc = rowDocument([{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }]);
 * doc.id; doc.simhash; doc.bytes; // the raw object's bytes
 * ```
 */
import { canonicalBytes } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { documentId, simhash64 } from "../hygiene.ts";
import type { ChatMessage } from "../template_render.ts";

/** A row's identity and raw bytes. */
export interface RowDocument {
  /** The hygiene id of the row's text. */
  readonly id: string;
  /** The 64-bit SimHash of the row's text, 16 hex. */
  readonly simhash: string;
  /** The root of `bytes`. */
  readonly object: string;
  /** Canonical JSON of `{messages}` (the raw document object). */
  readonly bytes: Uint8Array;
}

/** The text a row's id and SimHash are computed from: `role\ncontent` per message, joined by newlines. */
export function rowText(messages: readonly ChatMessage[]): string {
  return messages.map((m) => `${m.role}\n${m.content}`).join("\n");
}

/** The document a row makes. */
export function rowDocument(messages: readonly ChatMessage[]): RowDocument {
  const text = rowText(messages);
  const bytes = canonicalBytes({ messages: messages.map((m) => ({ role: m.role, content: m.content })) });
  return { id: documentId(text), simhash: simhash64(text), object: sha256Hex(bytes), bytes };
}
