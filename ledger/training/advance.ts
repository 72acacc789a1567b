/**
 * Advances the live job through its machine (`workflows/training.ts` or `workflows/growth.ts`), applies the
 * machine's `moves` to balances and the job's escrow, stores the new state and, when the job ends, applies
 * its effect on the global training facts: an accepted step moves the learning root to the claim's model,
 * advances the training round and the period's step count and marks the work identity paid; an accepted
 * growth moves the learning root and counts a growth (the round is kept). The serving root never changes here.
 * Used by transaction handlers and by the block-boundary rules alike, so both settle the same way.
 */
import type { HandlerResult, LedgerEnv } from "../tx/context.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import { growth, type GrowthEvent } from "../../workflows/growth.ts";
import { training, type TrainingEvent } from "../../workflows/training.ts";
import { applyMoves } from "./moves.ts";
import { type Job, periodAt, trainingWriter } from "./store.ts";

const ENDED = new Set(["settled", "rejected", "expired"]);

/** True when a job's state is terminal. */
export function jobEnded(job: Job): boolean {
  return ENDED.has(job.state.status);
}

/** Feeds `event` to the job's machine at `env` and applies the result; a rejection changes nothing. */
export function advanceJob(
  state: LedgerWriter,
  job: Job,
  event: TrainingEvent,
  env: LedgerEnv,
): HandlerResult {
  const step = job.kind === "training"
    ? training.apply(job.state, event, env)
    : growth.apply(job.state, event as GrowthEvent, env);
  if (!step.ok) return step;
  const moved = applyMoves(state, step.state.moves, job.escrow, env.height);
  if (!moved.ok) return moved;
  const next = { ...job, state: step.state, escrow: moved.escrow } as Job;
  const t = trainingWriter(state);
  t.setJob(next);
  if (jobEnded(next)) finish(state, next, env);
  return { ok: true };
}

function finish(state: LedgerWriter, job: Job, env: LedgerEnv): void {
  if (job.escrow !== 0) throw new Error(`Cannot end job ${job.id}: its escrow is ${job.escrow}, expected 0`);
  const t = trainingWriter(state);
  const l = t.lifecycle()!;
  let period = periodAt(l, env.height, env.params.period_blocks);
  let { learning_root: learning, training_round: round } = l;
  const s = job.state;
  if (s.status === "settled" && job.kind === "training" && "work" in s && s.work) {
    learning = s.work.model_root;
    round += 1;
    period = { ...period, steps: period.steps + 1 };
    t.setPaid(s.work.work_identity, job.claim_id!);
  } else if (s.status === "settled" && job.kind === "growth") {
    learning = job.state.growth.model_root;
    period = { ...period, growths: period.growths + 1 };
  }
  t.setLifecycle({ ...l, learning_root: learning, training_round: round, period, job: null });
}
