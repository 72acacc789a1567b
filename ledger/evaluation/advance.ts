/**
 * Advances score claims and evaluations through their machines (`workflows/score.ts`,
 * `workflows/evaluation.ts`) and applies what follows, for the transaction handlers and the block boundary
 * alike:
 *
 * - a score's moves go to balances and its escrow; when it ends, its evaluation (if still live) hears
 *   `score_settled` with the committed losses and targets (accepted), or `score_failed` (rejected or expired),
 *   which reopens the group at the same offset;
 * - when an evaluation is decided (by the gate or by its deadline) a promotion makes the candidate the serving
 *   root (the learning root already is it); a failure returns the learning root to the serving root. Either
 *   way it leaves the live slot, enters the bounded history and the oldest beyond `MAX_RETAINED_EVALUATIONS`
 *   are pruned. Paid training is never touched.
 */
import { evaluation, type EvaluationEvent } from "../../workflows/evaluation.ts";
import type { ClaimEvent } from "../../workflows/_claim.ts";
import { score as scoreMachine } from "../../workflows/score.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import { applyMoves } from "../training/moves.ts";
import { trainingWriter } from "../training/store.ts";
import type { HandlerResult, LedgerEnv } from "../tx/context.ts";
import { type EvaluationRun, evaluationWriter, MAX_RETAINED_EVALUATIONS, type ScoreEntry } from "./store.ts";

const ENDED = new Set(["settled", "rejected", "expired"]);

/** True when a score claim's state is terminal. */
export function scoreEnded(s: ScoreEntry): boolean {
  return ENDED.has(s.state.status);
}

/** Feeds a claim-phase event to a score claim and applies the result; a rejection changes nothing. */
export function advanceScore(
  state: LedgerWriter,
  entry: ScoreEntry,
  event: ClaimEvent,
  env: LedgerEnv,
): HandlerResult {
  const step = scoreMachine.apply(entry.state, event, env);
  if (!step.ok) return step;
  const moved = applyMoves(state, step.state.moves, entry.escrow, env.height);
  if (!moved.ok) return moved;
  const next: ScoreEntry = { ...entry, state: step.state, escrow: moved.escrow };
  const w = evaluationWriter(state);
  if (!ENDED.has(next.state.status)) {
    w.setScore(next);
    return { ok: true };
  }
  if (next.escrow !== 0) throw new Error(`Cannot end score ${next.id}: its escrow is ${next.escrow}`);
  const f = w.facts()!;
  w.setFacts({ ...f, pending: f.pending.filter((c) => c !== next.id) });
  const run = w.run(next.evaluation_id);
  if (run === null) {
    w.deleteScore(next.id);
    return { ok: true };
  }
  w.setScore({ ...next, ended: env.height });
  if (run.state.status === "decided") return { ok: true };
  const s = next.state;
  const fed = advanceEvaluation(
    state,
    run,
    s.status === "settled"
      ? { type: "score_settled", claim_id: next.id, losses: s.scored.losses, targets: s.scored.targets }
      : { type: "score_failed", claim_id: next.id },
    env,
  );
  if (!fed.ok) throw new Error(`Cannot end score ${next.id}: ${fed.message}`);
  return { ok: true };
}

/** Feeds an event to an evaluation and applies the result; a rejection changes nothing. */
export function advanceEvaluation(
  state: LedgerWriter,
  run: EvaluationRun,
  event: EvaluationEvent,
  env: LedgerEnv,
): HandlerResult {
  const step = evaluation.apply(run.state, event, env);
  if (!step.ok) return step;
  const w = evaluationWriter(state);
  const next: EvaluationRun = { ...run, state: step.state };
  if (step.state.status !== "decided") {
    w.setRun(next);
    return { ok: true };
  }
  const t = trainingWriter(state);
  const l = t.lifecycle()!;
  const f = w.facts()!;
  const promoted = step.state.promoted;
  if (promoted) t.setLifecycle({ ...l, serving_root: step.state.candidate });
  else t.setLifecycle({ ...l, learning_root: l.serving_root });
  w.setRun({ ...next, ended: env.height });
  w.addHistory(env.height, run.id);
  let retained = f.retained + 1;
  if (retained > MAX_RETAINED_EVALUATIONS) {
    for (const [key, oldId] of w.history().slice(0, retained - MAX_RETAINED_EVALUATIONS)) {
      w.prune(key, w.run(oldId)!);
      retained--;
    }
  }
  w.setFacts({
    ...f,
    live: null,
    retained,
    serving: promoted
      ? { model_root: step.state.candidate, evaluation: run.id, since: env.height }
      : f.serving,
  });
  return { ok: true };
}
