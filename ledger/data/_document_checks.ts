/**
 * The per-part checks of a cohort document (PROTOCOL §6), used by `document.ts`: its windows against the
 * pinned sources and cursors, then its documents (roles, positions, uniqueness and consumption, counts) and
 * the batches they name (one row each, targets the next tokens, evaluation rows of one length per group).
 * Each kind of refusal has its own error code so a proposer learns exactly which rule it broke.
 */
import { hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError, reject, type Rejection } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { validateBatch } from "../../kernels/batch.ts";
import type { ModelConfig } from "../../kernels/config.ts";
import { IGNORE_INDEX } from "../../kernels/cross_entropy.ts";
import { MAX_ROW_TOKENS } from "../../text/windows.ts";
import type { CohortContext, CohortEntry, SourceWindow } from "./document.ts";
import { allowedRoles, type DocumentRole } from "./source.ts";

/** Windows per document, at most. */
export const MAX_COHORT_WINDOWS = 8;
/** Rows per window, at most. */
export const MAX_WINDOW_ROWS = 4_096;
/** Batches (windows) per document. */
export const MAX_DOCUMENT_BATCHES = 4;
/**
 * Evaluation documents per group unless the genesis sets `data.evaluation_documents`, and the train document
 * bounds.
 */
export const RETENTION_DOCUMENTS = 32;
export const FRESH_DOCUMENTS = 32;
export const MIN_TRAIN_DOCUMENTS = 1;
export const MAX_TRAIN_DOCUMENTS = 128;
/** The longest evaluation row. */
export const MAX_EVALUATION_ROW = 128;

const ENTRY_KEYS = ["id", "source", "row", "object", "batches", "role", "omitted_targets"];
const ROLES: readonly DocumentRole[] = ["train", "retention", "fresh"];

type Result<T> = { ok: true; value: T } | Rejection;

function refuse(code: Rejection["code"], message: string): Rejection {
  return reject(code, `Cannot propose data: ${message}`);
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** Checks the windows; a map from source name to its window. */
export function checkWindows(value: unknown, ctx: CohortContext): Result<Map<string, SourceWindow>> {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_COHORT_WINDOWS) {
    return refuse("invalid_proposal", `windows must be a list of 1-${MAX_COHORT_WINDOWS}`);
  }
  const out = new Map<string, SourceWindow>();
  let last = "";
  for (const [i, w] of value.entries()) {
    if (!isObject(w) || !hasExactKeys(w, ["source", "start", "end"]) || typeof w.source !== "string") {
      return refuse("invalid_proposal", `windows[${i}] is not {source, start, end}`);
    }
    if (i > 0 && w.source <= last) {
      return refuse(
        "invalid_proposal",
        `windows[${i}] source ${w.source} is not after ${last}: sort, one per source`,
      );
    }
    last = w.source;
    if (!ctx.sources.has(w.source)) {
      return refuse("unknown_source", `source ${w.source} is not pinned in genesis`);
    }
    const cursor = ctx.cursors[w.source] ?? 0;
    if (w.start !== cursor) {
      return refuse(
        "window_not_at_cursor",
        `window of ${w.source} starts at ${w.start}, its cursor is ${cursor}`,
      );
    }
    if (!isCount(w.end) || w.end - cursor < 1 || w.end - cursor > MAX_WINDOW_ROWS) {
      return refuse(
        "invalid_proposal",
        `window of ${w.source} ends at ${w.end}, expected 1-${MAX_WINDOW_ROWS} rows`,
      );
    }
    out.set(w.source, w as SourceWindow);
  }
  return { ok: true, value: out };
}

function entryShape(d: unknown, i: number): Rejection | null {
  const ok = isObject(d) && hasExactKeys(d, ENTRY_KEYS) && isRoot(d.id) && typeof d.source === "string" &&
    isCount(d.row) && isRoot(d.object) && Array.isArray(d.batches) && d.batches.length >= 1 &&
    d.batches.length <= MAX_DOCUMENT_BATCHES && d.batches.every(isRoot) &&
    ROLES.includes(d.role as DocumentRole) &&
    isCount(d.omitted_targets);
  if (ok) return null;
  return refuse(
    "invalid_proposal",
    `documents[${i}] is not {${
      ENTRY_KEYS.join(", ")
    }} with roots, 1-${MAX_DOCUMENT_BATCHES} batches and a role`,
  );
}

/** One row, labels −100 or the next token, the last −100; its length, or a rejection. */
function checkBatch(
  value: JsonValue | undefined,
  root: string,
  config: CohortContext["config"],
): Result<number> {
  if (value === undefined) return refuse("invalid_proposal", `batch ${root} is not in the metadata`);
  try {
    const b = validateBatch(value, config as ModelConfig);
    const ids = b.input_ids[0]!, labels = b.labels[0]!;
    if (b.input_ids.length !== 1) throw new Error(`it has ${b.input_ids.length} rows, expected 1`);
    if (ids.length > MAX_ROW_TOKENS) {
      throw new Error(`its row has ${ids.length} tokens, at most ${MAX_ROW_TOKENS}`);
    }
    for (let t = 0; t < ids.length; t++) {
      const want = t + 1 < ids.length ? ids[t + 1] : IGNORE_INDEX;
      if (labels[t] !== IGNORE_INDEX && labels[t] !== want) {
        throw new Error(`label ${t} is ${labels[t]}, expected -100 or the next token ${want}`);
      }
    }
    return { ok: true, value: ids.length };
  } catch (e) {
    const message = e instanceof ProtocolError ? e.message : (e as Error).message;
    return refuse("invalid_batch", `batch ${root}: ${message}`);
  }
}

/** Checks every document and the batches it names; the batch roots by group. */
export function checkEntries(
  value: unknown,
  windows: ReadonlyMap<string, SourceWindow>,
  batches: Readonly<Record<string, JsonValue>>,
  ctx: CohortContext,
): Result<{ train_batches: string[]; retention_batches: string[]; fresh_batches: string[] }> {
  if (!Array.isArray(value) || value.length > RETENTION_DOCUMENTS + FRESH_DOCUMENTS + MAX_TRAIN_DOCUMENTS) {
    return refuse("wrong_document_count", "documents must be a list of at most 192");
  }
  const ids = new Set<string>(), positions = new Set<string>(), roots = new Set<string>();
  const groups: Record<DocumentRole, string[]> = { train: [], retention: [], fresh: [] };
  const lengths: Partial<Record<DocumentRole, number>> = {};
  for (const [i, raw] of value.entries()) {
    const shape = entryShape(raw, i);
    if (shape) return shape;
    const d = raw as CohortEntry;
    const w = windows.get(d.source);
    if (!w) return refuse("row_outside_window", `documents[${i}] is from ${d.source}, which has no window`);
    if (d.row < w.start || d.row >= w.end) {
      return refuse(
        "row_outside_window",
        `documents[${i}] row ${d.row} is outside ${d.source} ${w.start}-${w.end - 1}`,
      );
    }
    const allowed = allowedRoles(ctx.sources.get(d.source)!.role, d.id);
    if (!allowed.includes(d.role)) {
      return refuse(
        "relabelled_heldout",
        `documents[${i}] ${d.id} is labelled ${d.role}, its source and id make it ${allowed.join(" or ")}`,
      );
    }
    const evaluation = d.role !== "train";
    if (evaluation && d.omitted_targets !== 0) {
      return refuse(
        "incomplete_evaluation",
        `documents[${i}] is ${d.role} with ${d.omitted_targets} omitted targets`,
      );
    }
    if (ids.has(d.id) || ctx.consumed.document(d.id)) {
      return refuse(
        "document_reused",
        `documents[${i}] id ${d.id} ${ids.has(d.id) ? "repeats" : "was consumed"}`,
      );
    }
    ids.add(d.id);
    const at = `${d.source}#${d.row}`;
    if (positions.has(at) || ctx.consumed.position(d.source, d.row)) {
      return refuse(
        "position_reused",
        `documents[${i}] (${d.source}, ${d.row}) ${positions.has(at) ? "repeats" : "was consumed"}`,
      );
    }
    positions.add(at);
    for (const root of d.batches) {
      if (roots.has(root) || ctx.consumed.batch(root)) {
        return refuse(
          "batch_reused",
          `documents[${i}] batch ${root} ${roots.has(root) ? "repeats" : "was consumed"}`,
        );
      }
      roots.add(root);
      const length = checkBatch(batches[root], root, ctx.config);
      if (!length.ok) return length;
      if (evaluation) {
        const want = lengths[d.role] ?? length.value;
        if (length.value !== want || length.value > MAX_EVALUATION_ROW) {
          return refuse(
            "mixed_row_lengths",
            `documents[${i}] ${d.role} row length is ${length.value}, expected ${want} (at most ${MAX_EVALUATION_ROW})`,
          );
        }
        lengths[d.role] = want;
      }
      groups[d.role].push(root);
    }
  }
  const count = (role: DocumentRole) => value.filter((d) => (d as CohortEntry).role === role).length;
  const [r, f, t] = [count("retention"), count("fresh"), count("train")];
  const want = {
    retention: ctx.evaluation_documents ?? RETENTION_DOCUMENTS,
    fresh: ctx.evaluation_documents ?? FRESH_DOCUMENTS,
  };
  if (r !== want.retention || f !== want.fresh || t < MIN_TRAIN_DOCUMENTS || t > MAX_TRAIN_DOCUMENTS) {
    return refuse(
      "wrong_document_count",
      `${r} retention, ${f} fresh and ${t} train documents, expected ${want.retention}, ${want.fresh} and ` +
        `${MIN_TRAIN_DOCUMENTS}-${MAX_TRAIN_DOCUMENTS}`,
    );
  }
  return {
    ok: true,
    value: { train_batches: groups.train, retention_batches: groups.retention, fresh_batches: groups.fresh },
  };
}
