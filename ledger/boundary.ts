/**
 * Block-boundary rules (PROTOCOL §9) that exist so far, in their order: evidence from the consensus engine
 * (ledger/evidence.ts: slash and jail), validator set changes (a height tick
 * for every validator: pending bonds activate at their epoch boundary, leaving validators are removed), the
 * training rules (period reset, assignment expiry, claim and challenge deadlines: ledger/training/boundary.ts),
 * the score claims' deadlines (ledger/evaluation/boundary.ts), the data rules (proposal expiry then
 * activation, then cohort deadlines: ledger/data/boundary.ts), the evaluation deadline (same file as the
 * score deadlines),
 * the inference job ticks (expiry, response windows, reopening: ledger/inference/boundary.ts),
 * then the verifier reward of the previous block, paid to its committers in proportion to their power at that
 * height, the remainder of the integer division burned.
 */
import { validatorMachine } from "../workflows/validator.ts";
import { applyEvidence, type Evidence } from "./evidence.ts";
import type { LedgerWriter } from "./state/accessors.ts";
import type { LedgerEnv } from "./tx/context.ts";
import { storeValidatorState } from "./tx/validators.ts";
import { trainingBoundary } from "./training/boundary.ts";
import { dataBoundary } from "./data/boundary.ts";
import { inferenceBoundary } from "./inference/boundary.ts";
import { evaluationDeadline, scoreDeadlines } from "./evaluation/boundary.ts";

/** Applies the height tick to every validator whose state it changes. */
export function validatorSetChanges(state: LedgerWriter, env: LedgerEnv): void {
  for (const record of state.validators()) {
    if (record.state.status !== "pending" && record.state.status !== "leaving") continue;
    const step = validatorMachine.apply(record.state, { type: "tick" }, env);
    if (step.ok && step.state !== record.state) storeValidatorState(state, record, step.state, env);
  }
}

/**
 * Pays the verifier reward of block `height` to `committers` (consensus keys that attested it):
 * `floor(reward × power_i / Σ power)` to each owner, the remainder burned; no committers burns it all.
 */
export function payVerifierRewards(state: LedgerWriter, height: number, committers: readonly string[]): void {
  const reward = state.verifierPool(height);
  if (reward === 0) return;
  const powers = committers.map((key) => [key, state.powerAt(key, height)] as const).filter(([, p]) => p > 0);
  const total = powers.reduce((s, [, p]) => s + BigInt(p), 0n);
  let paid = 0;
  for (const [key, power] of powers) {
    const share = Number((BigInt(reward) * BigInt(power)) / total);
    if (share === 0) continue;
    const owner = state.validator(key)!.owner;
    const account = state.account(owner);
    state.setAccount(owner, { ...account, balance: account.balance + share });
    paid += share;
  }
  state.burn(reward - paid);
  state.setVerifierPool(height, 0);
}

/**
 * Credits `atoms` of newly issued verifier reward to block `height` (the training settlement of a later issue
 * calls this with `verifier_share` of each reward it mints). It is escrowed until paid in the next block.
 */
export function creditVerifierReward(state: LedgerWriter, height: number, atoms: number): void {
  state.issue(atoms);
  state.setVerifierPool(height, state.verifierPool(height) + atoms);
}

/**
 * Runs the boundary rules for the block at `env.height` whose last commit names `committers`, with the
 * engine's verified `evidence` (none under the embedded engine).
 */
export function beginBlock(
  state: LedgerWriter,
  env: LedgerEnv,
  committers: readonly string[],
  evidence: readonly Evidence[] = [],
): void {
  applyEvidence(state, env, evidence);
  validatorSetChanges(state, env);
  trainingBoundary(state, env);
  scoreDeadlines(state, env);
  dataBoundary(state, env);
  evaluationDeadline(state, env);
  inferenceBoundary(state, env);
  payVerifierRewards(state, env.height - 1, committers);
}
