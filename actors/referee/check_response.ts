/**
 * The referee's check of one stage of an inference response (PROTOCOL §8.1): read the job's generation
 * record from the chain, recompute the prefill over the record's own ids with the pinned model (so that
 * every honest activation is in the referee's store as evidence), fetch the stage's inputs — the partition's
 * components and input activation, or the head's embedding, final norm and final hidden state — and replay
 * it with `replayGeneration`. The answer is `match`, `mismatch` (`forward output` or `generated token`),
 * `unavailable` (an input nobody serves: the provider is asked for it) or `error`.
 *
 * @example
 * ```ts
 * import { checkResponseStage } from "./check_response.ts";
 * // const v = await checkResponseStage({ chain, store, workers }, claimId, 2); // the head
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";
import {
  type GenerationRecord,
  generationRecord,
  type HeadTrace,
  type PartitionTrace,
} from "../../kernels/generation_record.ts";
import { generationNeeded, replayGeneration } from "../../kernels/generation_referee.ts";
import { loadModel } from "../../kernels/manifest.ts";
import type { JobAnswer } from "../../ledger/inference/wire.ts";
import type { ChainClient } from "../common/chain.ts";
import { type CheckSources, fetchObject, type StageVerdict } from "./check.ts";

/** The response a claim id names, as the chain has it; null when it is not the job's latest response. */
export async function responseRecord(
  chain: ChainClient,
  claimId: string,
): Promise<{ job: JobAnswer; record: GenerationRecord; traces: PartitionTrace[]; head: HeadTrace } | null> {
  const job = await chain.inferenceOfClaim(claimId);
  if (job === null) {
    throw new ProtocolError("not_found", `Cannot check response ${claimId}: the chain does not know it`);
  }
  // A later response replaced it, or it was refuted and the job reopened (no response is pending now).
  if (job.claims[job.claims.length - 1] !== claimId || !("response" in job.state)) return null;
  const m = job.metadata ?? {};
  const rootOf = (job.state as { response?: { record_root: string } }).response?.record_root ?? "";
  const record = m[rootOf] as unknown as GenerationRecord | undefined;
  if (record === undefined || !Array.isArray(record.traces)) {
    throw new ProtocolError("invalid_record", `Cannot check response ${claimId}: its metadata has no record`);
  }
  const traces = record.traces.map((t) => m[t] as unknown as PartitionTrace);
  return { job, record, traces, head: m[record.head] as unknown as HeadTrace };
}

/** Responses whose honest activations are already in the store (bounded; a restart recomputes them). */
const computed = new Set<string>();

/** Checks stage `stage` (partitions 0 … S−1, the head S) of response `claimId`. */
export async function checkResponseStage(
  src: CheckSources,
  claimId: string,
  stage: number,
): Promise<StageVerdict> {
  const r = await responseRecord(src.chain, claimId);
  if (r === null) {
    return { verdict: "error", what: null, root: null, message: "a later response replaced this one" };
  }
  const { record, traces, head } = r;
  if (!computed.has(claimId)) {
    const model = await loadModel(src.store, record.model_root);
    const honest = generationRecord(
      model,
      record.model_root,
      record.prompt_ids,
      record.tokens,
      { max_tokens: record.max_tokens, eos_id: record.eos_id },
      traces.map((t) => t.partition),
    );
    for (const bytes of honest.objects.values()) await src.store.put(bytes);
    if (computed.size >= 64) computed.delete(computed.values().next().value!);
    computed.add(claimId);
  }
  const manifest = await src.chain.manifest(record.model_root);
  const bytes = new Map<string, Uint8Array>();
  for (const root of generationNeeded(manifest, traces, head, stage)) {
    const b = await fetchObject(src, root);
    if (b === null) return { verdict: "unavailable", what: null, root, message: `nobody serves ${root}` };
    bytes.set(root, b);
  }
  const v = replayGeneration({ manifest, record, traces, head, stage, fetch: (root) => bytes.get(root) });
  if (v.verdict === "match") return { verdict: "match", what: null, root: null, message: "" };
  if (v.verdict === "mismatch") return { verdict: "mismatch", what: v.what, root: null, message: v.message };
  return { verdict: "error", what: null, root: null, message: v.message };
}
