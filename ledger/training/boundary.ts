/**
 * The training rules of the block boundary (PROTOCOL §5, §9), in order: the period reset (a new period starts
 * with zero step and growth counters), then the height tick of the live job — an expired assignment burns 10%
 * of its bond and refunds 90%; a claim past its absolute `expires` closes unpaid (publisher refunded, any
 * challenger's bond burned); an unanswered availability challenge rejects the claim with slash; an unresolved
 * fraud challenge burns the challenger's bond and reopens the window; an unchallenged claim past its window
 * is accepted (bond refunded, reward minted: the verifier share to this block's verifier reward, the rest to
 * the reserved workers). All deadlines compare with `H > deadline`.
 */
import type { LedgerWriter } from "../state/accessors.ts";
import type { LedgerEnv } from "../tx/context.ts";
import { advanceJob, jobEnded } from "./advance.ts";
import { periodAt, trainingWriter } from "./store.ts";

/** Runs the training boundary rules for the block at `env.height`. */
export function trainingBoundary(state: LedgerWriter, env: LedgerEnv): void {
  const t = trainingWriter(state);
  const l = t.lifecycle();
  if (!l) return;
  const period = periodAt(l, env.height, env.params.period_blocks);
  if (period !== l.period) t.setLifecycle({ ...l, period });
  if (l.job === null) return;
  // A tick that finds nothing due is refused by the machine and changes nothing; one due tick either ends
  // the job or reopens its window, after which nothing else is due at this height.
  for (let i = 0; i < 3; i++) {
    const job = t.job(l.job);
    if (!job || jobEnded(job)) return;
    if (!advanceJob(state, job, { type: "tick" }, env).ok) return;
  }
}
