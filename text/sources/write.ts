/**
 * Writing chat rows as source files, for the devnet's bundled data and for tests: JSON Lines (one canonical
 * `{"messages":[…]}` object per line, each ending with `\n`) and Parquet in the Hugging Face chat-dataset
 * layout (one `messages` column, a list of `{role, content}` structs, written with `hyparquet-writer`).
 *
 * @example
 * ```ts
 * import { jsonlBytes, parquetBytes } from "./write.ts";
 * const rows = [[{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }]];
 * await Deno.writeFile("chat.jsonl", jsonlBytes(rows));
 * await Deno.writeFile("chat.parquet", parquetBytes(rows));
 * ```
 */
import { parquetWriteBuffer } from "hyparquet-writer";
import { canonical } from "../../core/canonical.ts";
import type { ChatMessage } from "../template_render.ts";

/** The JSON Lines bytes of `rows`. */
export function jsonlBytes(rows: readonly (readonly ChatMessage[])[]): Uint8Array {
  const lines = rows.map((messages) =>
    canonical({ messages: messages.map((m) => ({ role: m.role, content: m.content })) }) + "\n"
  );
  return new TextEncoder().encode(lines.join(""));
}

/** The Parquet bytes of `rows` (the `messages` column in the standard three-level list layout). */
export function parquetBytes(rows: readonly (readonly ChatMessage[])[], rowGroupSize = 1_000): Uint8Array {
  const data = rows.map((messages) => messages.map((m) => ({ role: m.role, content: m.content })));
  const buffer = parquetWriteBuffer({
    columnData: [{ name: "messages", data }],
    schema: [
      { name: "root", num_children: 1 },
      { name: "messages", repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
      { name: "list", repetition_type: "REPEATED", num_children: 1 },
      { name: "element", repetition_type: "OPTIONAL", num_children: 2 },
      { name: "role", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
      { name: "content", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
    ],
    rowGroupSize,
  });
  return new Uint8Array(buffer);
}
