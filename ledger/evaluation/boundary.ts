/**
 * The evaluation rules of the block boundary (PROTOCOL §9). `scoreDeadlines` runs with the claim and challenge
 * deadlines: the height tick of every live score claim in claim-id order (an unchallenged score past its
 * window settles and its losses join their group; an unanswered availability challenge rejects it with
 * slash; an unresolved fraud challenge burns the challenger's bond and reopens the window; past its absolute
 * `expires` it closes unpaid). `evaluationDeadline` runs with the cohort deadlines: a live evaluation past its
 * `expires` fails, and the learning root returns to the serving root.
 */
import type { LedgerWriter } from "../state/accessors.ts";
import type { LedgerEnv } from "../tx/context.ts";
import { advanceEvaluation, advanceScore, scoreEnded } from "./advance.ts";
import { evaluationWriter } from "./store.ts";

/** Ticks every live score claim at `env.height`. */
export function scoreDeadlines(state: LedgerWriter, env: LedgerEnv): void {
  const w = evaluationWriter(state);
  const f = w.facts();
  if (!f) return;
  for (const claimId of f.pending) {
    // A tick with nothing due is refused by the machine and changes nothing; a due tick ends the claim or
    // reopens its window, after which nothing else is due at this height.
    for (let i = 0; i < 3; i++) {
      const s = w.score(claimId);
      if (!s || scoreEnded(s)) break;
      if (!advanceScore(state, s, { type: "tick" }, env).ok) break;
    }
  }
}

/** Fails the live evaluation when `env.height` is past its `expires`. */
export function evaluationDeadline(state: LedgerWriter, env: LedgerEnv): void {
  const w = evaluationWriter(state);
  const live = w.facts()?.live ?? null;
  if (live === null) return;
  const run = w.run(live)!;
  if (env.height > run.state.expires) advanceEvaluation(state, run, { type: "tick" }, env);
}
