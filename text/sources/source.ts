/**
 * Opening a pinned source: the file named for a spec is read (at most `MAX_SOURCE_BYTES`), its SHA-256 is
 * compared with the spec's before any row is parsed (`source_mismatch` otherwise), and its rows are served by
 * the reader of the spec's format. Every reader of the same bytes sees the same rows under the same numbers.
 *
 * @example
 * ```ts
 * import { openSource } from "./source.ts";
 * const source = await openSource(spec, "data/chat.jsonl");
 * const rows = await source.read(0, 16); // the messages of rows 0..15
 * ```
 */
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { MAX_SOURCE_BYTES } from "../../core/limits.ts";
import type { ChatMessage } from "../template_render.ts";
import { JsonlRows } from "./jsonl.ts";
import { ParquetRows } from "./parquet.ts";
import type { SourceSpec } from "./spec.ts";

/** An opened source whose bytes matched its spec. */
export interface PinnedSource {
  readonly spec: SourceSpec;
  readonly path: string;
  /** How many rows the file has. */
  readonly count: number;
  /** The messages of rows `start` .. `end - 1` (`invalid_source` for a range outside the file). */
  read(start: number, end: number): Promise<ChatMessage[][]>;
}

/** Reads the file at `path`, checks its size and SHA-256 against `spec`, and opens its reader. */
export async function openSource(spec: SourceSpec, path: string): Promise<PinnedSource> {
  let bytes: Uint8Array;
  try {
    const { size } = await Deno.stat(path);
    if (size > MAX_SOURCE_BYTES) {
      throw new ProtocolError(
        "too_large",
        `Cannot open source ${spec.name}: ${path} is ${size} bytes, expected at most ${MAX_SOURCE_BYTES}`,
      );
    }
    bytes = await Deno.readFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ProtocolError("not_found", `Cannot open source ${spec.name}: ${path} does not exist`);
    }
    throw e;
  }
  const actual = sha256Hex(bytes);
  if (actual !== spec.sha256) {
    throw new ProtocolError(
      "source_mismatch",
      `Cannot open source ${spec.name}: ${path} has SHA-256 ${actual}, expected ${spec.sha256}`,
    );
  }
  const rows = spec.format === "jsonl" ? new JsonlRows(spec.name, bytes) : ParquetRows.open(spec.name, bytes);
  return {
    spec,
    path,
    count: rows.count,
    // deno-lint-ignore require-await
    async read(start: number, end: number): Promise<ChatMessage[][]> {
      if (
        !Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start ||
        end > rows.count
      ) {
        throw new ProtocolError(
          "invalid_source",
          `Cannot read rows ${start} to ${end - 1} of source ${spec.name}: it has ${rows.count} rows`,
        );
      }
      return rows.read(start, end);
    },
  };
}
