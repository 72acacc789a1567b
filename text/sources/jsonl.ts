/**
 * The JSON Lines reader: one row per line, each a JSON object with a `messages` list of `{role, content}`
 * (other fields of a row are ignored, as in a Hugging Face chat dataset). Lines end with `\n` (a `\r` before
 * it is dropped); the last line may lack it; an empty line is a malformed file, never a skipped row, so row
 * numbers are the same for every reader of the same bytes.
 *
 * @example
 * ```ts
 * import { JsonlRows } from "./jsonl.ts";
 * const rows = new JsonlRows("devnet/chat", new TextEncoder().encode('{"messages":[]}\n'));
 * rows.count; // 1
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";
import type { ChatMessage } from "../template_render.ts";
import { rowMessages } from "./rows.ts";

/** The rows of one JSON Lines file held in memory, indexed by line. */
export class JsonlRows {
  /** Byte offset where each line starts, plus the end of the last line. */
  private readonly starts: number[] = [];
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });

  constructor(readonly source: string, private readonly bytes: Uint8Array) {
    let at = 0;
    while (at < bytes.length) {
      this.starts.push(at);
      const nl = bytes.indexOf(0x0a, at);
      at = nl < 0 ? bytes.length : nl + 1;
    }
    this.starts.push(bytes.length);
  }

  /** How many rows the file has. */
  get count(): number {
    return this.starts.length - 1;
  }

  /** The messages of rows `start` .. `end - 1`. */
  read(start: number, end: number): ChatMessage[][] {
    const out: ChatMessage[][] = [];
    for (let row = start; row < end; row++) {
      let line: string;
      try {
        line = this.decoder.decode(this.bytes.subarray(this.starts[row], this.starts[row + 1]));
      } catch {
        throw new ProtocolError(
          "invalid_source",
          `Cannot read row ${row} of source ${this.source}: not UTF-8`,
        );
      }
      line = line.replace(/\r?\n$/, "");
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        throw new ProtocolError(
          "invalid_source",
          `Cannot read row ${row} of source ${this.source}: ${
            line.length === 0 ? "empty line" : (e as Error).message
          }`,
        );
      }
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new ProtocolError(
          "invalid_source",
          `Cannot read row ${row} of source ${this.source}: not an object`,
        );
      }
      out.push(rowMessages((value as { messages?: unknown }).messages, this.source, row));
    }
    return out;
  }
}
