/**
 * Advances an inference job through `workflows/inference.ts`, applies the machine's moves to balances and the
 * job's escrow (`ledger/training/moves.ts`, which cannot mint for these moves: the machine emits none), stores
 * the new state and, when the job ends (settled or expired), takes it off the live list, records its result
 * under (height, job id) and prunes the oldest results beyond `MAX_RETAINED_JOBS`. Used by the transaction
 * handlers and by the block-boundary rule alike.
 */
import { inference, type InferenceEvent } from "../../workflows/inference.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import type { HandlerResult, LedgerEnv } from "../tx/context.ts";
import { applyMoves } from "../training/moves.ts";
import { type InferenceJob, inferenceWriter, MAX_RETAINED_JOBS } from "./store.ts";

const ENDED = new Set(["settled", "expired"]);

/** True when a job's state is terminal. */
export function inferenceEnded(job: InferenceJob): boolean {
  return ENDED.has(job.state.status);
}

/** Feeds `event` to the job's machine at `env` and applies the result; a rejection changes nothing. */
export function advanceInference(
  state: LedgerWriter,
  job: InferenceJob,
  event: InferenceEvent,
  env: LedgerEnv,
): HandlerResult {
  const step = inference.apply(job.state, event, env);
  if (!step.ok) return step;
  const moved = applyMoves(state, step.state.moves, job.escrow, env.height);
  if (!moved.ok) return moved;
  const next: InferenceJob = { ...job, state: step.state, escrow: moved.escrow };
  if (ENDED.has(next.state.status)) finish(state, { ...next, ended: env.height }, env.height);
  else inferenceWriter(state).setJob(next);
  return { ok: true };
}

function finish(state: LedgerWriter, job: InferenceJob, height: number): void {
  if (job.escrow !== 0) throw new Error(`Cannot end inference job ${job.id}: its escrow is ${job.escrow}`);
  const w = inferenceWriter(state);
  const f = w.facts()!;
  w.setJob(job);
  w.addResult(height, job.id);
  let retained = f.retained + 1;
  if (retained > MAX_RETAINED_JOBS) {
    for (const [key, jobId] of w.results().slice(0, retained - MAX_RETAINED_JOBS)) {
      w.prune(key, w.job(jobId)!);
      retained--;
    }
  }
  w.setFacts({ ...f, live: f.live.filter((j) => j !== job.id), retained });
}
