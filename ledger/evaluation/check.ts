/**
 * The checks of `score` that the machines cannot see (PROTOCOL §7): the metadata is keyed by id and holds
 * exactly the score record (under `record_root`), its partition traces and its head; the record names the
 * model of the side it scores (else `wrong_model`) and passes the graph checks of `kernels/score_check.ts`
 * against the windows the ledger assigns (from the cohort's own batches). No neural work.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { PartitionTrace } from "../../kernels/forward_graph.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { checkScore } from "../../kernels/score_check.ts";
import type { ScoreHead, ScoreRecord } from "../../kernels/score_record.ts";
import { checkKeyedMetadata } from "../training/claim_check.ts";

/** A checked score. */
export interface CheckedScore {
  readonly record: ScoreRecord;
  readonly traces: PartitionTrace[];
  readonly head: ScoreHead;
}

/** The record, traces and head a score's metadata holds (already checked when it was accepted). */
export function scoreParts(metadata: JsonObject, recordRoot: string): CheckedScore {
  const record = metadata[recordRoot] as unknown as ScoreRecord;
  const traces = record.traces.map((t) => metadata[t] as unknown as PartitionTrace);
  return { record, traces, head: metadata[record.head] as unknown as ScoreHead };
}

/** Checks a score's metadata and record against the model scored and the assigned windows. */
export function checkScoreTx(
  metadata: unknown,
  recordRoot: unknown,
  modelRoot: string,
  manifest: Manifest,
  windows: readonly Batch[],
): CheckedScore | Rejection {
  const what = "score";
  const bad = checkKeyedMetadata(metadata, what);
  if (bad) return bad;
  const m = metadata as JsonObject;
  const record = typeof recordRoot === "string" && Object.hasOwn(m, recordRoot) ? m[recordRoot] : undefined;
  const r = record as { traces?: unknown; head?: unknown; model_root?: unknown } | undefined;
  if (!r || !Array.isArray(r.traces) || typeof r.head !== "string" || !Object.hasOwn(m, r.head)) {
    return reject("invalid_record", `Cannot ${what}: the metadata does not hold the record and its head`);
  }
  const traces = (r.traces as JsonValue[]).map((t) =>
    typeof t === "string" && Object.hasOwn(m, t) ? m[t] : null
  );
  if (traces.some((t) => t === null) || Object.keys(m).length !== traces.length + 2) {
    return reject("invalid_record", `Cannot ${what}: the metadata holds other entries than the record's`);
  }
  if (r.model_root !== modelRoot) {
    return reject(
      "wrong_model",
      `Cannot ${what}: the record scores model ${String(r.model_root)}, the side's model is ${modelRoot}`,
    );
  }
  const checked = checkScore(record, traces, m[r.head], manifest, { model_root: modelRoot, windows });
  return checked.ok ? { record: checked.record, traces: checked.traces, head: checked.head } : checked;
}
