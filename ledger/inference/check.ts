/**
 * The checks of `respond` that the inference machine cannot see (PROTOCOL §8): the metadata is keyed by id and
 * holds exactly the record (under `record_root`), its partition traces and its head trace; the record passes
 * the graph checks of `kernels/generation_check.ts` against the job (its model — the one it was bought for,
 * even after a promotion —, prompt, limit and the codec's EOS id). No neural work.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { checkGeneration } from "../../kernels/generation_check.ts";
import type { GenerationRecord, HeadTrace, PartitionTrace } from "../../kernels/generation_record.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { Job } from "../../workflows/inference.ts";
import { checkKeyedMetadata } from "../training/claim_check.ts";

/** A checked response. */
export interface CheckedResponse {
  readonly record: GenerationRecord;
  readonly traces: PartitionTrace[];
  readonly head: HeadTrace;
}

/** Checks a response's metadata and record against `job`; the first rejection otherwise. */
export function checkResponse(
  metadata: unknown,
  recordRoot: unknown,
  job: Job,
  manifest: Manifest,
  eosId: number | null,
): CheckedResponse | Rejection {
  const what = `respond to inference job ${job.id}`;
  const bad = checkKeyedMetadata(metadata, what);
  if (bad) return bad;
  const m = metadata as JsonObject;
  const record = typeof recordRoot === "string" && Object.hasOwn(m, recordRoot) ? m[recordRoot] : undefined;
  const r = record as { traces?: unknown; head?: unknown } | undefined;
  if (!r || !Array.isArray(r.traces) || typeof r.head !== "string" || !Object.hasOwn(m, r.head)) {
    return reject("invalid_record", `Cannot ${what}: the metadata does not hold the record and its head`);
  }
  const traces = (r.traces as JsonValue[]).map((t) =>
    typeof t === "string" && Object.hasOwn(m, t) ? m[t] : null
  );
  if (traces.some((t) => t === null) || Object.keys(m).length !== traces.length + 2) {
    return reject("invalid_record", `Cannot ${what}: the metadata holds other entries than the record's`);
  }
  const checked = checkGeneration(record, traces, m[r.head], manifest, {
    model_root: job.model_root,
    prompt_ids: job.prompt_ids,
    max_tokens: job.max_tokens,
    eos_id: eosId,
  });
  return checked.ok ? { record: checked.record, traces: checked.traces, head: checked.head } : checked;
}
