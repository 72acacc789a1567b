/**
 * A score claim (PROTOCOL §7 `score`): a forward graph over the next ≤ 4 evaluation windows of one group,
 * bonded and challengeable like a training step, minting nothing.
 *
 * The head commits each window's loss as a hex float64; the ledger reads them from the record and passes them
 * with the window target counts at `score` time. When the claim settles, the ledger feeds
 * `score_settled` with these losses to the evaluation machine; when it is rejected or expires, `score_failed`.
 *
 * @example
 * ```ts
 * import { openScore, score } from "./score.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const env = { height: 1, time: 0, params: DEVNET_PARAMS };
 * const s = openScore({ id: "1".repeat(64), owner: "o", stages: 2, evaluation_id: "2".repeat(64), side: "baseline", role: "fresh", offset: 0, record_root: "3".repeat(64), metadata_root: "4".repeat(64), losses: ["0x1.0000000000000p+1"], targets: [64] }, env);
 * if (s.ok) score.apply(s.state, { type: "tick" }, { ...env, height: 8 }); // settled
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { MAX_WORKERS } from "../core/limits.ts";
import type { MachineEnv, Step } from "./machine.ts";
import { lock } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { openClaim } from "./_claim.ts";
import { type ClaimOnlyState, defineClaimOnlyMachine } from "./_claim_machine.ts";

/** Most windows one score covers. */
export const WINDOWS_PER_SCORE = 4;

/** What a score claims: the group, the first window, and each window's loss and scored targets. */
export type Scored = {
  readonly evaluation_id: string;
  readonly side: "baseline" | "candidate";
  readonly role: "retention" | "fresh";
  readonly offset: number;
  readonly record_root: string;
  readonly metadata_root: string;
  /** Per-window loss, canonical hex float64. */
  readonly losses: readonly string[];
  /** Per-window scored target count. */
  readonly targets: readonly number[];
};

/** Every state of a score claim. */
export type ScoreState = ClaimOnlyState<"scored", Scored>;

/** A checked `score` transaction; `stages` is the number of partitions of its forward graph. */
export type ScoreInput = Scored & { readonly id: string; readonly owner: string; readonly stages: number };

/** Checks the committed losses and targets of a score; returns a message or null. */
export function scoredProblem(s: Pick<Scored, "losses" | "targets" | "offset">): string | null {
  const n = s.losses.length;
  if (n < 1 || n > WINDOWS_PER_SCORE || s.targets.length !== n) {
    return `${n} losses and ${s.targets.length} target counts, expected 1-${WINDOWS_PER_SCORE} of each`;
  }
  if (!Number.isSafeInteger(s.offset) || s.offset < 0 || s.offset % WINDOWS_PER_SCORE !== 0) {
    return `offset is ${s.offset}, expected a non-negative multiple of ${WINDOWS_PER_SCORE}`;
  }
  for (const text of s.losses) {
    let x: number;
    try {
      x = fromHexFloat(text);
    } catch {
      return `loss ${JSON.stringify(text)} is not a canonical hex float`;
    }
    if (x < 0) return `loss ${text} is negative`;
  }
  if (!s.targets.every((t) => Number.isSafeInteger(t) && t >= 1)) {
    return `target counts are [${s.targets.join(",")}], expected positive integers`;
  }
  return null;
}

/** Creates the `claimed` state of a score: locks `claim_bond`, window `H + challenge_blocks`. */
export function openScore(input: ScoreInput, env: MachineEnv<WorkflowParams>): Step<ScoreState> {
  const problem = scoredProblem(input);
  if (problem !== null) return reject("invalid_record", `Cannot score: ${problem}`);
  if (![input.id, input.evaluation_id, input.record_root, input.metadata_root].every(isRoot)) {
    return reject("invalid_record", "Cannot score: a root is not 64 lowercase hex");
  }
  if (!Number.isSafeInteger(input.stages) || input.stages < 1 || input.stages > MAX_WORKERS) {
    return reject("invalid_record", `Cannot score: ${input.stages} stages, expected 1-${MAX_WORKERS}`);
  }
  const { id, owner, stages, ...scored } = input;
  const p = env.params;
  const claim = openClaim(
    { id, owner, bond: p.claim_bond, stages, expires: env.height + p.max_claim_blocks },
    env.height,
    p,
  );
  return { ok: true, state: { status: "claimed", claim, scored, moves: [lock(owner, p.claim_bond)] } };
}

/** The score claim machine. */
export const score = defineClaimOnlyMachine<"scored", Scored>("score", "scored");
