/**
 * The Curator's corpus registry, derived from its journal alone: every finished `collect` operation recorded
 * a tranche (rows `start … end−1` of one source) and what it kept, so the collected documents are the union of
 * the tranches' kept documents in journal order, and a source's cursor is the end of its last tranche. Nothing
 * else tracks where the curator stands, so a crash cannot make the two disagree.
 *
 * @example
 * ```ts
 * import { readCorpus } from "./corpus.ts";
 * const corpus = readCorpus(journal);
 * corpus.cursor("devnet-train"); // the next row to collect
 * ```
 */
import { decodeCanonical, type JsonObject } from "../../core/canonical.ts";
import type { Journal } from "../runtime/journal.ts";

/** A kept document: where it is and what it is. */
export interface Collected extends JsonObject {
  source: string;
  row: number;
  id: string;
  simhash: string;
  object: string;
}

/** A row that was not kept, and why. */
export interface Dropped extends JsonObject {
  row: number;
  id: string;
  /** `duplicate` (same id as `of`), `near_duplicate` (SimHash within distance of `of`), `consumed` (the chain
   * consumed this id) or `invalid` (the row is not a usable conversation; `of` holds the error code). */
  reason: "duplicate" | "near_duplicate" | "consumed" | "invalid";
  of: string;
}

/** What one `collect` operation recorded. */
export interface Tranche extends JsonObject {
  source: string;
  start: number;
  end: number;
  kept: Collected[];
  dropped: Dropped[];
}

/** The corpus at one point of the journal. */
export class Corpus {
  private readonly cursors = new Map<string, number>();
  private readonly ids = new Map<string, Collected>();
  readonly documents: Collected[] = [];
  readonly tranches: Tranche[] = [];

  /** Adds a tranche (in journal order). */
  add(t: Tranche): void {
    this.tranches.push(t);
    this.cursors.set(t.source, Math.max(this.cursors.get(t.source) ?? 0, t.end));
    for (const d of t.kept) {
      this.documents.push(d);
      this.ids.set(d.id, d);
    }
  }

  /** The next row of `source` to collect (0 before any tranche). */
  cursor(source: string): number {
    return this.cursors.get(source) ?? 0;
  }

  /** The kept document with this id, or undefined. */
  byId(id: string): Collected | undefined {
    return this.ids.get(id);
  }
}

/** The corpus recorded by every finished `collect` operation of `journal`. */
export function readCorpus(journal: Journal): Corpus {
  const corpus = new Corpus();
  for (const op of journal.operations()) {
    if (op.handler !== "collect" || op.status !== "done" || op.result === null) continue;
    const r = decodeCanonical(op.result) as { ok: boolean; value?: Tranche };
    if (r.ok && r.value) corpus.add(r.value);
  }
  return corpus;
}
