/**
 * Advances a data proposal through `workflows/cohort.ts`, applies the machine's moves to balances and the
 * proposal's escrow, stores the new state and, when the proposal ends, applies its effect on the data facts:
 * an expired proposal only clears the pending slot (cursors and consumed sets are unchanged); an activated one
 * advances the cursors to its window ends, records every document id, position and batch root as consumed,
 * makes its root the data root, stores the cohort with the schedule the machine fixed (starting at the
 * current training round, deadline `H + training_blocks`) and makes its training batches the replay pool of
 * the next cohort. Used by `vote_data` and by the block boundary alike.
 */
import { cohort as cohortMachine, type CohortEvent, type Electorate } from "../../workflows/cohort.ts";
import { hasPower } from "../../workflows/validator.ts";
import type { LedgerView, LedgerWriter } from "../state/accessors.ts";
import { applyMoves } from "../training/moves.ts";
import { trainingWriter } from "../training/store.ts";
import type { HandlerResult, LedgerEnv } from "../tx/context.ts";
import { dataWriter, type Proposal } from "./store.ts";

/** Owner accounts with the summed power of their validators that vote at `height`, sorted by owner. */
export function electorateAt(view: LedgerView, height: number): Electorate {
  const power = new Map<string, number>();
  for (const v of view.validators()) {
    if (!hasPower(v.state)) continue;
    const p = view.powerAt(v.consensus_key, height);
    if (p > 0) power.set(v.owner, (power.get(v.owner) ?? 0) + p);
  }
  return [...power].sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

/** Feeds `event` to the proposal's machine and applies the result; a rejection changes nothing. */
export function advanceProposal(
  state: LedgerWriter,
  proposal: Proposal,
  event: CohortEvent,
  env: LedgerEnv,
): HandlerResult {
  const step = cohortMachine.apply(proposal.state, event, env);
  if (!step.ok) return step;
  const moved = applyMoves(state, step.state.moves, proposal.escrow, env.height);
  if (!moved.ok) return moved;
  const next: Proposal = { ...proposal, state: step.state, escrow: moved.escrow };
  const d = dataWriter(state);
  d.setProposal(next);
  const s = next.state;
  if (s.status !== "activated" && s.status !== "expired") return { ok: true };
  if (next.escrow !== 0) {
    throw new Error(`Cannot end proposal ${next.id}: its escrow is ${next.escrow}, expected 0`);
  }
  const l = d.lifecycle()!;
  if (s.status !== "activated") {
    d.setLifecycle({ ...l, proposal: null });
    return { ok: true };
  }
  d.consume(s.data_root, d.document(s.data_root)!);
  d.setCohort({
    data_root: s.data_root,
    proposal: next.id,
    activated: env.height,
    deadline: env.height + l.training_blocks,
    start_round: trainingWriter(state).lifecycle()!.training_round,
    schedule: s.schedule,
    status: "training",
    ended: null,
  });
  d.setLifecycle({
    ...l,
    data_root: s.data_root,
    cursors: next.cursors,
    proposal: null,
    cohort: s.data_root,
    pool: s.train_batches,
  });
  return { ok: true };
}
