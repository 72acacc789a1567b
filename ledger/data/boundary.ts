/**
 * The data rules of the block boundary (PROTOCOL §6, §9), after the claim and challenge deadlines and in this
 * order: the pending proposal's tick (expiry past `expires`, else activation once it is due, has more than 2/3
 * of both the snapshot and the current electorate, and no assignment, claim or evaluation is live), then the latest
 * cohort's state: a cohort whose scheduled steps are all settled is `trained`; an unfinished cohort past its
 * deadline closes at the first block with no live job (a claim reserved before the deadline still settles),
 * and the learning root returns to the serving root. Paid work and consumed ids stay.
 */
import type { LedgerWriter } from "../state/accessors.ts";
import { trainingWriter } from "../training/store.ts";
import { evaluationWriter } from "../evaluation/store.ts";
import type { LedgerEnv } from "../tx/context.ts";
import { advanceProposal, electorateAt } from "./advance.ts";
import { cohortPosition } from "./schedule.ts";
import { dataWriter } from "./store.ts";

/** Runs the data boundary rules for the block at `env.height`. */
export function dataBoundary(state: LedgerWriter, env: LedgerEnv): void {
  const d = dataWriter(state);
  const l = d.lifecycle();
  if (!l) return;
  const t = trainingWriter(state);
  if (l.proposal !== null) {
    // A tick with nothing due is refused by the machine and changes nothing.
    const busy = t.lifecycle()!.job !== null || (evaluationWriter(state).facts()?.live ?? null) !== null;
    advanceProposal(state, d.proposal(l.proposal)!, {
      type: "tick",
      current: electorateAt(state, env.height),
      busy,
    }, env);
  }
  const latest = d.lifecycle()!.cohort;
  const cohort = latest === null ? null : d.cohort(latest);
  if (cohort === null || cohort.status !== "training") return;
  const training = t.lifecycle()!;
  if (cohortPosition(cohort, training.training_round) >= cohort.schedule.length) {
    d.setCohort({ ...cohort, status: "trained", ended: env.height });
  } else if (env.height > cohort.deadline && training.job === null) {
    d.setCohort({ ...cohort, status: "closed", ended: env.height });
    t.setLifecycle({ ...training, learning_root: training.serving_root });
  }
}
