/**
 * The reviewer's and the curator's own copies of the raw files: each source opened once per process (its
 * SHA-256 checked against the spec on open) and read by row.
 *
 * @example
 * ```ts
 * import { SourceReader } from "./reader.ts";
 * const reader = new SourceReader();
 * const messages = await reader.row(config.sources[0], 12);
 * ```
 */
import { openSource, type PinnedSource } from "../../text/sources/source.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import type { CuratorSource } from "./config.ts";

/** Opened sources by name. */
export class SourceReader {
  private readonly opened = new Map<string, PinnedSource>();

  /** The source, opened (and hashed) on first use. */
  async open(s: CuratorSource): Promise<PinnedSource> {
    const found = this.opened.get(s.spec.name);
    if (found) return found;
    const opened = await openSource(s.spec, s.file);
    this.opened.set(s.spec.name, opened);
    return opened;
  }

  /** The messages of one row. */
  async row(s: CuratorSource, row: number): Promise<ChatMessage[]> {
    return (await (await this.open(s)).read(row, row + 1))[0]!;
  }
}
