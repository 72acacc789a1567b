/**
 * Equivocation evidence (PROTOCOL §4.1), the first block-boundary rule (§9). A piece of evidence names a
 * consensus key, the height and time of the misbehaviour and its kind; it reaches the ledger only through
 * the consensus engine's verified channel (CometBFT's `FinalizeBlock.misbehavior`), never from a transaction
 * or an RPC request. Each piece is applied once, ever: its id `id(evidence)` is recorded in the `evidence`
 * table, and a repeat is ignored. Applying it burns one quarter of the validator's remaining bond, rounded up,
 * and jails it (its power drops to 0 at this height, so the engine removes it from the set); a validator that
 * already withdrew has nothing left to burn.
 */
import { id } from "../core/digest.ts";
import { validatorMachine } from "../workflows/validator.ts";
import type { LedgerWriter } from "./state/accessors.ts";
import type { LedgerEnv } from "./tx/context.ts";
import { storeValidatorState } from "./tx/validators.ts";

/** One piece of verified misbehaviour. */
export interface Evidence {
  readonly kind: "duplicate_vote" | "light_client_attack";
  readonly consensus_key: string;
  readonly height: number;
  /** Block time of the misbehaviour, milliseconds since the epoch. */
  readonly time: number;
}

/** What applying one piece of evidence did (stored under its id in the `evidence` table). */
export interface EvidenceRecord {
  readonly consensus_key: string;
  readonly applied_height: number;
  readonly burned: number;
}

/** The id under which a piece of evidence is recorded. */
export function evidenceId(e: Evidence): string {
  return id({ kind: e.kind, consensus_key: e.consensus_key, height: e.height, time: e.time });
}

/** The burn of one piece of evidence: a quarter of the remaining bond, rounded up. */
export function slashAmount(bond: number): number {
  return Math.ceil(bond / 4);
}

/** Applies each piece of `evidence` not seen before; unknown keys are recorded with nothing burned. */
export function applyEvidence(state: LedgerWriter, env: LedgerEnv, evidence: readonly Evidence[]): void {
  for (const e of evidence) {
    const key = evidenceId(e);
    if (state.evidence(key)) continue;
    const record = state.validator(e.consensus_key);
    let burned = 0;
    if (record && record.state.status !== "withdrawn") {
      let current = record;
      const jail = validatorMachine.apply(record.state, { type: "jail" }, env);
      if (jail.ok) {
        storeValidatorState(state, record, jail.state, env);
        current = state.validator(e.consensus_key)!;
      }
      burned = slashAmount(current.amount);
      state.setValidator({ ...current, amount: current.amount - burned });
      state.burn(burned);
    }
    state.setEvidence(key, { consensus_key: e.consensus_key, applied_height: env.height, burned });
  }
}
