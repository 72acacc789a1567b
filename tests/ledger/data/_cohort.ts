/**
 * Builds valid cohort documents for tests: two pinned sources (a `train` JSON Lines source and a `retention`
 * Parquet source), 32 retention documents, 32 fresh documents (held-out ids of the train source; `evaluation`
 * of each when given) and `train`
 * train documents, each with one one-row batch whose labels are the next tokens. Ids and tokens derive from
 * `salt`, so two cohorts with different salts share nothing.
 */
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import type { Batch } from "../../../kernels/batch.ts";
import {
  buildCohortDocument,
  type CohortDocument,
  type CohortEntry,
  cohortMetadata,
} from "../../../ledger/data/document.ts";
import type { SourceSpec } from "../../../ledger/data/source.ts";
import { heldOutRole } from "../../../text/hygiene.ts";

/** The pinned sources of the test genesis. */
export const SOURCES: SourceSpec[] = [
  {
    name: "chat-retention",
    revision: "r1",
    split: "train",
    license: "cc0-1.0",
    role: "retention",
    format: "parquet",
    sha256: "e1".repeat(32),
  },
  {
    name: "chat-train",
    revision: "r1",
    split: "train",
    license: "cc0-1.0",
    role: "train",
    format: "jsonl",
    sha256: "a7".repeat(32),
  },
];

/** Options of a test cohort. */
export interface CohortOptions {
  readonly previous: string;
  readonly tokenizer_root: string;
  readonly cursors: Readonly<Record<string, number>>;
  readonly salt: string;
  /** Train documents (default 8). */
  readonly train?: number;
  /** Retention and fresh documents (default 32 of each, the genesis default). */
  readonly evaluation?: number;
  /** Row length of train batches (default 8) and of evaluation batches (default 6). */
  readonly trainLength?: number;
  readonly evalLength?: number;
}

/** A built cohort: its document, root, batches by root and the proposal metadata. */
export interface TestCohort {
  readonly document: CohortDocument;
  readonly root: string;
  readonly batches: Map<string, Batch>;
  readonly metadata: JsonObject;
}

/** A one-row batch of `length` tokens derived from `seed`, labels the next tokens. */
export function testBatch(seed: string, length: number): Batch {
  const digest = id(seed);
  const ids = Array.from(
    { length },
    (_, t) => 1 + (parseInt(digest.slice((t * 4) % 60, (t * 4) % 60 + 4), 16) % 4000),
  );
  return { input_ids: [ids], labels: [[...ids.slice(1), -100]] };
}

/** Ids `id(salt/kind/n)` for n = 0, 1, … whose held-out role is `role`, `count` of them. */
function ids(salt: string, kind: string, role: "training" | "evaluation" | "any", count: number): string[] {
  const out: string[] = [];
  for (let n = 0; out.length < count; n++) {
    const d = id(`${salt}/${kind}/${n}`);
    if (role === "any" || heldOutRole(d) === role) out.push(d);
  }
  return out;
}

/** Builds a valid cohort at `cursors`; `edit` may change the entries and batches before the document is built. */
export function testCohort(
  o: CohortOptions,
  edit?: (entries: CohortEntry[], batches: Map<string, Batch>) => void,
): TestCohort {
  const train = o.train ?? 8;
  const batches = new Map<string, Batch>();
  const entries: CohortEntry[] = [];
  const rows: Record<string, number> = {};
  const add = (docId: string, source: string, role: CohortEntry["role"], length: number) => {
    const row = (o.cursors[source] ?? 0) + (rows[source] = (rows[source] ?? -1) + 1);
    const batch = testBatch(`${docId}/batch`, length);
    const root = id(batch as unknown as JsonValue);
    batches.set(root, batch);
    entries.push({
      id: docId,
      source,
      row,
      object: id(`${docId}/object`),
      batches: [root],
      role,
      omitted_targets: 0,
    });
  };
  const evaluation = o.evaluation ?? 32;
  for (const d of ids(o.salt, "retention", "any", evaluation)) {
    add(d, "chat-retention", "retention", o.evalLength ?? 6);
  }
  for (const d of ids(o.salt, "fresh", "evaluation", evaluation)) {
    add(d, "chat-train", "fresh", o.evalLength ?? 6);
  }
  for (const d of ids(o.salt, "train", "training", train)) add(d, "chat-train", "train", o.trainLength ?? 8);
  edit?.(entries, batches);
  const windows = SOURCES.map((s) => ({
    source: s.name,
    start: o.cursors[s.name] ?? 0,
    end: (o.cursors[s.name] ?? 0) + (rows[s.name] ?? 0) + 1 + 2,
  }));
  const document = buildCohortDocument({
    previous: o.previous,
    tokenizer_root: o.tokenizer_root,
    windows,
    documents: entries,
  });
  return { document, root: id(document), batches, metadata: cohortMetadata(document, [...batches.values()]) };
}
