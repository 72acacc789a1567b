/**
 * The inference rule of the block boundary (PROTOCOL §9, after the evaluation and cohort deadlines, before the
 * verifier rewards): the height tick of every live job in job-id order — an unanswered job past `expires` is
 * refunded its escrow (the fees stay burned); a response whose window passed unchallenged settles (the provider
 * is paid tokens × price and gets its bond back, the requester the rest; nothing is minted); an unanswered
 * availability challenge refutes the response; a refuted job reopens for a retry, or expires past `expires`.
 */
import type { LedgerWriter } from "../state/accessors.ts";
import type { LedgerEnv } from "../tx/context.ts";
import { advanceInference, inferenceEnded } from "./advance.ts";
import { inferenceWriter } from "./store.ts";

/** Runs the inference boundary rule for the block at `env.height`. */
export function inferenceBoundary(state: LedgerWriter, env: LedgerEnv): void {
  const w = inferenceWriter(state);
  const f = w.facts();
  if (!f) return;
  for (const jobId of f.live) {
    // A tick that finds nothing due is refused by the machine and changes nothing; a due tick may settle,
    // refute (then the next tick reopens) or expire the job, so at most three ticks change it at one height.
    for (let i = 0; i < 3; i++) {
      const job = w.job(jobId);
      if (!job || inferenceEnded(job)) break;
      if (!advanceInference(state, job, { type: "tick" }, env).ok) break;
    }
  }
}
