/**
 * The growth lifecycle (PROTOCOL §5.3): a `grow` adds 1-16 identity blocks to the learning model.
 *
 * A growth is a claim with no reservation: it locks `claim_bond`, opens a challenge window and can be
 * challenged like a training step (one stage: the referee needs only the parent's last block). Accepted, it
 * refunds the bond and mints nothing; the ledger then sets the learning root to `model_root` and keeps the
 * training round. The ledger checks beforehand that growth is allowed (before the cohort's first step, within
 * `growths_per_period`) and that the manifest differs from the parent only by identity blocks.
 *
 * @example
 * ```ts
 * import { grow, growth } from "./growth.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const env = { height: 5, time: 0, params: DEVNET_PARAMS };
 * const g = grow({ id: "1".repeat(64), owner: "o", parent: "2".repeat(64), model_root: "3".repeat(64), metadata_root: "4".repeat(64), added_blocks: 2 }, env);
 * if (g.ok) growth.apply(g.state, { type: "tick" }, { ...env, height: 12 }); // settled
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import type { MachineEnv, Step } from "./machine.ts";
import { lock } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { type ClaimEvent, openClaim } from "./_claim.ts";
import { type ClaimOnlyState, defineClaimOnlyMachine } from "./_claim_machine.ts";

/** Most identity blocks one growth may add. */
export const MAX_GROWTH_BLOCKS = 16;

/** What a growth claims. */
export type Growth = {
  readonly parent: string;
  readonly model_root: string;
  readonly metadata_root: string;
  readonly added_blocks: number;
};

/** Every state of a growth. */
export type GrowthState = ClaimOnlyState<"growth", Growth>;

/** Every event of a growth: the claim phase only. */
export type GrowthEvent = ClaimEvent;

/** A checked `grow` transaction: its txid becomes the claim id. */
export type GrowInput = Growth & { readonly id: string; readonly owner: string };

/** Creates the `claimed` state of a growth: locks `claim_bond`, window `H + challenge_blocks`. */
export function grow(input: GrowInput, env: MachineEnv<WorkflowParams>): Step<GrowthState> {
  const n = input.added_blocks;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_GROWTH_BLOCKS) {
    return reject("invalid_model", `Cannot grow: ${n} blocks added, expected 1-${MAX_GROWTH_BLOCKS}`);
  }
  if (![input.id, input.parent, input.model_root, input.metadata_root].every(isRoot)) {
    return reject("invalid_model", "Cannot grow: a root is not 64 lowercase hex");
  }
  if (input.model_root === input.parent) {
    return reject("invalid_model", `Cannot grow: model root ${input.model_root} equals its parent`);
  }
  const p = env.params;
  const claim = openClaim(
    {
      id: input.id,
      owner: input.owner,
      bond: p.claim_bond,
      stages: 1,
      expires: env.height + p.max_claim_blocks,
    },
    env.height,
    p,
  );
  const growth: Growth = {
    parent: input.parent,
    model_root: input.model_root,
    metadata_root: input.metadata_root,
    added_blocks: n,
  };
  return { ok: true, state: { status: "claimed", claim, growth, moves: [lock(input.owner, p.claim_bond)] } };
}

/** The growth machine. */
export const growth = defineClaimOnlyMachine<"growth", Growth>("growth", "growth");
