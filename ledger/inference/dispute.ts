/**
 * What a dispute over a pending inference response needs (PROTOCOL §8.1): the objects an availability
 * challenge may name (each partition's output), the objects a fraud challenge of a stage needs sealed
 * (a partition's components and input activation; the head's embedding, final norm and final hidden state),
 * and the referee's verdict on the sealed bytes alone (`kernels/generation_referee.ts`).
 */
import type { JsonValue } from "../../core/canonical.ts";
import type { GenerationRecord, HeadTrace, PartitionTrace } from "../../kernels/generation_record.ts";
import { generationNeeded, generationObjects, replayGeneration } from "../../kernels/generation_referee.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { Verdict } from "../../kernels/referee.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import { sealedBytes } from "../training/dispute.ts";
import type { TrainingView } from "../training/store.ts";
import type { InferenceJob } from "./store.ts";

/** The record and traces of a job's last response, read from its metadata. */
export function responseParts(
  job: InferenceJob,
): { record: GenerationRecord; traces: PartitionTrace[]; head: HeadTrace } {
  const m = job.metadata!;
  const s = job.state as { response?: { record_root: string } };
  const record = m[s.response!.record_root] as unknown as GenerationRecord;
  const traces = record.traces.map((t) => m[t] as unknown as PartitionTrace);
  return { record, traces, head: m[record.head] as unknown as HeadTrace };
}

/** The objects an availability challenge may name. */
export function responseObjects(job: InferenceJob): Set<string> {
  return generationObjects(responseParts(job).traces);
}

/** The sorted objects a fraud challenge of `stage` needs sealed. */
export function responseNeeded(job: InferenceJob, manifest: Manifest, stage: number): string[] {
  const p = responseParts(job);
  return generationNeeded(manifest, p.traces, p.head, stage);
}

/** Runs the referee over the live fraud challenge `c`, reading only the objects it has sealed. */
export function responseVerdict(
  t: TrainingView,
  job: InferenceJob,
  manifest: Manifest,
  c: Challenge,
): Verdict {
  const p = responseParts(job);
  const fetch = (root: string) => c.sealed.includes(root) ? sealedBytes(t, root) : undefined;
  return replayGeneration({ manifest, ...p, stage: c.stage, fetch });
}

/** The manifest a job was bought for (kept by the ledger for every model it ever knew). */
export function jobManifest(t: TrainingView, job: InferenceJob): Manifest {
  const m = t.manifest(job.state.job.model_root);
  if (!m) {
    throw new Error(`Cannot dispute inference job ${job.id}: model ${job.state.job.model_root} is unknown`);
  }
  return m as Manifest & JsonValue;
}
