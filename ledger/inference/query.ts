/**
 * The inference query paths of the validator RPC (PROTOCOL §13; answer shapes in `wire.ts`):
 * `/inference?id=<job id>` (a live job or a retained result, with the last response's metadata),
 * `/inference?claim=<respond txid>` (the same answer for the job a response answers),
 * `/inference?provider=<account id>` (that provider's live jobs) and `/inference` (every live job).
 * Unknown ids answer null (404 at the RPC). Queries read through a view and cannot write.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { isRoot } from "../../core/hex.ts";
import type { LedgerView } from "../state/accessors.ts";
import { type InferenceJob, inferenceView } from "./store.ts";
import type { JobAnswer, LiveJobsAnswer } from "./wire.ts";

function answer(job: InferenceJob, withMetadata: boolean): JobAnswer {
  return {
    job_id: job.id,
    live: job.ended === null,
    ended: job.ended,
    escrow: job.escrow,
    claims: job.claims,
    state: job.state as unknown as JsonObject,
    metadata: withMetadata ? job.metadata : null,
  };
}

/** Answers an inference query, or null when the path or id is unknown. */
export function answerInferenceQuery(
  pathname: string,
  params: URLSearchParams,
  view: LedgerView,
  height: number,
): JsonValue | null {
  if (pathname !== "/inference") return null;
  const v = inferenceView(view);
  const jobId = params.get("id");
  if (jobId !== null) {
    const job = isRoot(jobId) ? v.job(jobId) : null;
    return job ? answer(job, true) : null;
  }
  const claimId = params.get("claim");
  if (claimId !== null) {
    const job = isRoot(claimId) ? v.jobOfClaim(claimId) : null;
    return job ? answer(job, true) : null;
  }
  const provider = params.get("provider");
  const all = (v.facts()?.live ?? []).map((j) => v.job(j)!);
  const jobs = all.filter((j) => provider === null || j.state.job.provider === provider);
  const f = v.facts();
  const live: LiveJobsAnswer = {
    height,
    eos_id: f?.eos_id ?? null,
    terms: (f?.terms ?? null) as JsonObject | null,
    jobs: jobs.map((j) => answer(j, false)),
  };
  return live;
}
