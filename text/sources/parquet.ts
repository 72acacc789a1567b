/**
 * The Parquet reader (`hyparquet` with `hyparquet-compressors`, so Snappy, Gzip, Brotli, Zstd and LZ4 files
 * all read): a file in the Hugging Face chat-dataset layout, whose `messages` column is a list of
 * `{role, content}` structs; other columns are not read. Rows are numbered from 0 across row groups in file
 * order.
 *
 * @example
 * ```ts
 * import { ParquetRows } from "./parquet.ts";
 * const rows = await ParquetRows.open("hf/chat", bytes);
 * const first = await rows.read(0, 1); // [[{role:"user",content:"..."}, ...]]
 * ```
 */
import { parquetMetadata, parquetReadObjects, parquetSchema } from "hyparquet";
import { compressors } from "hyparquet-compressors";
import { ProtocolError } from "../../core/errors.ts";
import type { ChatMessage } from "../template_render.ts";
import { rowMessages } from "./rows.ts";

type FileMetaData = ReturnType<typeof parquetMetadata>;

/** The rows of one Parquet file held in memory. */
export class ParquetRows {
  private constructor(
    readonly source: string,
    private readonly file: ArrayBuffer,
    private readonly metadata: FileMetaData,
    /** How many rows the file has. */
    readonly count: number,
  ) {}

  /** Reads the footer and checks there is a `messages` column; `invalid_source` otherwise. */
  static open(source: string, bytes: Uint8Array): ParquetRows {
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    let metadata: FileMetaData;
    try {
      metadata = parquetMetadata(file);
    } catch (e) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read source ${source}: not a Parquet file (${(e as Error).message})`,
      );
    }
    const columns = parquetSchema(metadata).children.map((c) => c.element.name);
    if (!columns.includes("messages")) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read source ${source}: its columns are ${columns.join(", ")}, expected a messages column`,
      );
    }
    const count = Number(metadata.num_rows);
    if (!Number.isSafeInteger(count) || count < 0) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read source ${source}: it claims ${metadata.num_rows} rows`,
      );
    }
    return new ParquetRows(source, file, metadata, count);
  }

  /** The messages of rows `start` .. `end - 1`. */
  async read(start: number, end: number): Promise<ChatMessage[][]> {
    if (end <= start) return [];
    let rows: Record<string, unknown>[];
    try {
      rows = await parquetReadObjects({
        file: this.file,
        metadata: this.metadata,
        columns: ["messages"],
        rowStart: start,
        rowEnd: end,
        compressors,
      });
    } catch (e) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read rows ${start} to ${end - 1} of source ${this.source}: ${(e as Error).message}`,
      );
    }
    if (rows.length !== end - start) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot read rows ${start} to ${end - 1} of source ${this.source}: got ${rows.length} rows`,
      );
    }
    return rows.map((r, i) => rowMessages(r.messages, this.source, start + i));
  }
}
