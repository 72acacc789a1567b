/**
 * Building a cohort from the collected corpus (pure, given the raw rows): for each source (retention and fresh
 * sources first, then held-out, then train sources, each group in the sources file's order), the collected
 * documents at or after the chain's cursor are taken in row order, each in the
 * role its source and id fix (`allowedRoles`; a `heldout` source fills retention first), while that role
 * still needs documents: exactly 32 retention and 32 fresh, up to `train` train documents. A document is
 * skipped when its id or a batch root was consumed or repeats, or when it is an evaluation document that does
 * not fit its windows. Each source's window runs from its cursor to the last row taken (at most 4,096 rows);
 * rows inside a window that were not taken are consumed unused when the cohort activates.
 *
 * @example
 * ```ts
 * import { buildCohort } from "./build.ts";
 * const cohort = buildCohort({ corpus, sources, facts, codec, windows, train: 128, messages });
 * cohort.root; cohort.metadata; // the propose_data fields
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Batch } from "../../kernels/batch.ts";
import {
  buildCohortDocument,
  type CohortDocument,
  type CohortEntry,
  cohortMetadata,
  type ConsumedIndex,
  FRESH_DOCUMENTS,
  MAX_TRAIN_DOCUMENTS,
  MAX_WINDOW_ROWS,
  RETENTION_DOCUMENTS,
  type SourceWindow,
} from "../../ledger/data/document.ts";
import { allowedRoles, type DocumentRole } from "../../ledger/data/source.ts";
import { id } from "../../core/digest.ts";
import type { TextCodec } from "../../text/codec.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import type { WindowOptions } from "../../text/windows.ts";
import type { CuratorSource } from "./config.ts";
import type { Collected, Corpus } from "./corpus.ts";
import { documentBatches } from "./windows.ts";

/** The chain's data facts a cohort is built against. */
export interface DataFacts {
  readonly data_root: string;
  readonly tokenizer_root: string;
  readonly cursors: Readonly<Record<string, number>>;
  readonly consumed: ConsumedIndex;
  /** Retention and fresh documents the chain wants per cohort (default 32 each). */
  readonly evaluation_documents?: number;
}

/** What building needs. */
export interface BuildInput {
  readonly corpus: Corpus;
  readonly sources: readonly CuratorSource[];
  readonly facts: DataFacts;
  readonly codec: TextCodec;
  readonly windows: WindowOptions;
  /** Train documents to take, at most (1–128). */
  readonly train: number;
  /** The raw messages of a collected document. */
  readonly messages: (doc: Collected) => ChatMessage[];
}

/** A built cohort: the document, its root, the batches and the `propose_data` metadata. */
export interface BuiltCohort {
  readonly document: CohortDocument;
  readonly root: string;
  readonly batches: Batch[];
  readonly metadata: JsonObject;
}

/** Builds the cohort; `invalid_proposal` when the corpus cannot fill the evaluation groups. */
export function buildCohort(input: BuildInput): BuiltCohort {
  const { facts, codec, windows } = input;
  const want: Record<DocumentRole, number> = {
    retention: facts.evaluation_documents ?? RETENTION_DOCUMENTS,
    fresh: facts.evaluation_documents ?? FRESH_DOCUMENTS,
    train: Math.min(Math.max(1, input.train), MAX_TRAIN_DOCUMENTS),
  };
  const entries: CohortEntry[] = [];
  const batches: Batch[] = [];
  const roots = new Set<string>();
  const ids = new Set<string>();
  const cohortWindows: SourceWindow[] = [];
  const full = () => (Object.keys(want) as DocumentRole[]).every((r) => want[r] === 0);
  const order = ["retention", "fresh", "heldout", "train"];
  const sources = [...input.sources].sort((a, b) => order.indexOf(a.spec.role) - order.indexOf(b.spec.role));
  for (const { spec } of sources) {
    const start = facts.cursors[spec.name] ?? 0;
    let end = start;
    const candidates = input.corpus.documents.filter((d) =>
      d.source === spec.name && d.row >= start && d.row < start + MAX_WINDOW_ROWS
    ).sort((a, b) => a.row - b.row);
    for (const d of candidates) {
      if (full()) break;
      if (ids.has(d.id) || facts.consumed.document(d.id) || facts.consumed.position(spec.name, d.row)) {
        continue;
      }
      const role = allowedRoles(spec.role, d.id).find((r) => want[r] > 0);
      if (role === undefined) continue;
      let cut;
      try {
        cut = documentBatches(codec, input.messages(d), windows, role !== "train");
      } catch (e) {
        if (e instanceof ProtocolError) continue; // incomplete evaluation document, or unusable row
        throw e;
      }
      if (
        cut.roots.some((r) => roots.has(r) || facts.consumed.batch(r)) ||
        new Set(cut.roots).size < cut.roots.length
      ) {
        continue;
      }
      cut.roots.forEach((r) => roots.add(r));
      batches.push(...cut.batches);
      ids.add(d.id);
      want[role]--;
      entries.push({
        id: d.id,
        source: spec.name,
        row: d.row,
        object: d.object,
        batches: cut.roots,
        role,
        omitted_targets: cut.omitted,
      });
      end = d.row + 1;
    }
    if (end > start) cohortWindows.push({ source: spec.name, start, end });
  }
  if (want.retention > 0 || want.fresh > 0 || entries.every((e) => e.role !== "train")) {
    const wanted = facts.evaluation_documents ?? RETENTION_DOCUMENTS;
    const have = (r: DocumentRole) => entries.filter((e) => e.role === r).length;
    throw new ProtocolError(
      "invalid_proposal",
      `Cannot build a cohort: the collected documents give ${have("retention")} retention, ${
        have("fresh")
      } fresh ` +
        `and ${have("train")} train documents, expected ${wanted}, ${
          facts.evaluation_documents ?? FRESH_DOCUMENTS
        } and at least 1; collect more`,
    );
  }
  const document = buildCohortDocument({
    previous: facts.data_root,
    tokenizer_root: facts.tokenizer_root,
    windows: cohortWindows,
    documents: entries,
  });
  return { document, root: id(document), batches, metadata: cohortMetadata(document, batches) };
}
