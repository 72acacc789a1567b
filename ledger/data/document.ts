/**
 * The cohort document (PROTOCOL §6) and the proposal metadata that carries it: the one format the Curator
 * builds and the ledger checks, so both run exactly this code.
 *
 * A document is `{format, previous, tokenizer_root, windows, documents}`:
 * - `format` is `"neuroshard-cohort-v1"`; `previous` the current data root; `tokenizer_root` the profile's
 *   codec root;
 * - `windows`: 1-8 `{source, start, end}`, sorted by source and one per source, `start` = the source's cursor,
 *   `1 ≤ end − start ≤ 4096` (rows `start … end−1`);
 * - `documents`: `{id, source, row, object, batches, role, omitted_targets}` with `id` the hygiene document id,
 *   `row` inside its source's window, `object` the root of the raw row (`id({messages})`, §11),
 *   `batches` 1-4 roots of one-window batches, `role` fixed by source and id (`allowedRoles`),
 *   `omitted_targets` the answer tokens that did not fit in the windows.
 *
 * `propose_data {data_root, metadata}` carries the document under `data_root = id(document)` and every batch
 * the document names under its root, and nothing else (`cohortMetadata`): the ledger checks batch contents
 * the way it checks claim metadata. A batch is the kernels' `{input_ids, labels}` with exactly one row whose
 * labels are −100 or the next token (`labels[t] = input_ids[t+1]`, the last −100).
 *
 * @example
 * ```ts
 * import { buildCohortDocument, checkCohortProposal, cohortMetadata } from "./document.ts";
 * const doc = buildCohortDocument({ previous, tokenizer_root, windows, documents });
 * const metadata = cohortMetadata(doc, batches);
 * const checked = checkCohortProposal(id(doc), metadata, context); // { ok: true, value } or a rejection
 * ```
 */
import {
  canonicalBytes,
  hasExactKeys,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { MAX_COHORT_BYTES } from "../../core/limits.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { ModelConfig } from "../../kernels/config.ts";
import { checkEntries, checkWindows } from "./_document_checks.ts";
import type { DocumentRole, SourceSpec } from "./source.ts";

/** The `format` of every cohort document of this profile. */
export const COHORT_FORMAT = "neuroshard-cohort-v1";

/** One source's rows `start … end−1`. */
export interface SourceWindow extends JsonObject {
  source: string;
  start: number;
  end: number;
}

/** One document of a cohort. */
export interface CohortEntry extends JsonObject {
  id: string;
  source: string;
  row: number;
  object: string;
  batches: string[];
  role: DocumentRole;
  omitted_targets: number;
}

/** A cohort document. */
export interface CohortDocument extends JsonObject {
  format: typeof COHORT_FORMAT;
  previous: string;
  tokenizer_root: string;
  windows: SourceWindow[];
  documents: CohortEntry[];
}

/** What the chain has consumed before (every answer false for a chain that never activated a cohort). */
export interface ConsumedIndex {
  document(documentId: string): boolean;
  position(source: string, row: number): boolean;
  batch(root: string): boolean;
}

/** What a document is checked against: the chain's current data facts. */
export interface CohortContext {
  /** The current data root (the document's `previous`). */
  readonly data_root: string;
  /** The profile's codec root. */
  readonly tokenizer_root: string;
  /** The pinned sources by name. */
  readonly sources: ReadonlyMap<string, SourceSpec>;
  /** Each pinned source's cursor (the next row not yet consumed). */
  readonly cursors: Readonly<Record<string, number>>;
  /** The genesis model's config (vocabulary and positions bound the batches). */
  readonly config: Pick<ModelConfig, "vocab_size" | "max_position_embeddings">;
  readonly consumed: ConsumedIndex;
  /** Retention and fresh documents the cohort must carry (the chain's `evaluation_documents`; default 32). */
  readonly evaluation_documents?: number;
}

/** A document that passed every check, with what activation needs. */
export interface CheckedCohort {
  readonly root: string;
  readonly document: CohortDocument;
  /** Batch roots of the `train` documents in document order: the cohort's training pool. */
  readonly train_batches: string[];
  readonly retention_batches: string[];
  readonly fresh_batches: string[];
  /** Each window's source and end: the cursors after activation. */
  readonly cursors: Record<string, number>;
}

/** The parts of a document its builder chooses (everything but `format`). */
export interface CohortParts {
  readonly previous: string;
  readonly tokenizer_root: string;
  readonly windows: readonly SourceWindow[];
  readonly documents: readonly CohortEntry[];
}

/** A consumed index that has seen nothing. */
export const NOTHING_CONSUMED: ConsumedIndex = {
  document: () => false,
  position: () => false,
  batch: () => false,
};

/** The canonical form of a document: windows sorted by source, documents by source then row. */
export function buildCohortDocument(parts: CohortParts): CohortDocument {
  const windows = [...parts.windows].map((w) => ({ source: w.source, start: w.start, end: w.end }))
    .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  const documents = [...parts.documents].map((d) => ({ ...d, batches: [...d.batches] }))
    .sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : a.row - b.row));
  return {
    format: COHORT_FORMAT,
    previous: parts.previous,
    tokenizer_root: parts.tokenizer_root,
    windows,
    documents,
  };
}

/** The `metadata` of `propose_data`: the document and each batch, every one under its id. */
export function cohortMetadata(document: CohortDocument, batches: readonly Batch[]): JsonObject {
  const out: JsonObject = { [id(document)]: document };
  for (const b of batches) out[id(b as unknown as JsonValue)] = b as unknown as JsonValue;
  return out;
}

/** Checks a document value against `ctx`; `batches` maps roots to batch values (the proposal's metadata). */
export function checkCohortDocument(
  value: unknown,
  batches: Readonly<Record<string, JsonValue>>,
  ctx: CohortContext,
): { ok: true; value: CheckedCohort } | Rejection {
  let size: number;
  try {
    size = canonicalBytes(value).length;
  } catch (e) {
    return reject(
      "invalid_proposal",
      `Cannot propose data: the document is not canonical JSON: ${(e as Error).message}`,
    );
  }
  if (size > MAX_COHORT_BYTES) {
    return reject(
      "too_large",
      `Cannot propose data: the document is ${size} bytes, at most ${MAX_COHORT_BYTES}`,
    );
  }
  const keys = ["format", "previous", "tokenizer_root", "windows", "documents"];
  if (!isObject(value) || !hasExactKeys(value, keys) || value.format !== COHORT_FORMAT) {
    return reject(
      "invalid_proposal",
      `Cannot propose data: the document must be exactly {${keys.join(", ")}} with format ${COHORT_FORMAT}`,
    );
  }
  if (value.tokenizer_root !== ctx.tokenizer_root) {
    return reject(
      "codec_mismatch",
      `Cannot propose data: tokenizer_root is ${
        JSON.stringify(value.tokenizer_root)
      }, expected ${ctx.tokenizer_root}`,
    );
  }
  if (value.previous !== ctx.data_root) {
    return reject(
      "wrong_previous",
      `Cannot propose data: previous is ${JSON.stringify(value.previous)}, expected ${ctx.data_root}`,
    );
  }
  const windows = checkWindows(value.windows, ctx);
  if (!windows.ok) return windows;
  const entries = checkEntries(value.documents, windows.value, batches, ctx);
  if (!entries.ok) return entries;
  const cursors: Record<string, number> = {};
  for (const w of windows.value.values()) cursors[w.source] = w.end;
  return {
    ok: true,
    value: { root: id(value), document: value as CohortDocument, ...entries.value, cursors },
  };
}

/**
 * Checks `propose_data`'s `data_root` and `metadata`: metadata is an object whose every key is the id of its
 * value, holding the document under `data_root` and exactly the batches it names; then the document itself.
 */
export function checkCohortProposal(
  dataRoot: unknown,
  metadata: unknown,
  ctx: CohortContext,
): { ok: true; value: CheckedCohort } | Rejection {
  if (!isRoot(dataRoot) || !isObject(metadata) || !Object.hasOwn(metadata, dataRoot)) {
    return reject("invalid_proposal", "Cannot propose data: metadata must hold the document under data_root");
  }
  const document = metadata[dataRoot]!;
  const size = canonicalBytes(document).length;
  if (size > MAX_COHORT_BYTES) {
    return reject(
      "too_large",
      `Cannot propose data: the document is ${size} bytes, at most ${MAX_COHORT_BYTES}`,
    );
  }
  for (const [k, v] of Object.entries(metadata)) {
    if (id(v) !== k) {
      return reject("invalid_proposal", `Cannot propose data: metadata key ${k} is not the id of its value`);
    }
  }
  const checked = checkCohortDocument(document, metadata, ctx);
  if (!checked.ok) return checked;
  const named = new Set([
    ...checked.value.train_batches,
    ...checked.value.retention_batches,
    ...checked.value.fresh_batches,
  ]);
  const extra = Object.keys(metadata).find((k) => k !== dataRoot && !named.has(k));
  if (extra !== undefined) {
    return reject(
      "invalid_proposal",
      `Cannot propose data: metadata holds ${extra}, which the document does not name`,
    );
  }
  return checked;
}

export {
  FRESH_DOCUMENTS,
  MAX_COHORT_WINDOWS,
  MAX_DOCUMENT_BATCHES,
  MAX_EVALUATION_ROW,
  MAX_TRAIN_DOCUMENTS,
  MAX_WINDOW_ROWS,
  MIN_TRAIN_DOCUMENTS,
  RETENTION_DOCUMENTS,
} from "./_document_checks.ts";
