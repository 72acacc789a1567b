/**
 * The validator lifecycle (PROTOCOL §4): `pending → active → leaving → cooldown → withdrawn`, and `jailed`.
 *
 * - A bond creates a `pending` validator that activates at the first epoch boundary at or after
 *   `bonded_height + activation_blocks` (a height tick).
 * - `unbond` of an active validator is allowed only while another validator stays active; it keeps its power
 *   until the next epoch boundary (`leaving`), then is removed (`cooldown`). A pending or jailed validator is
 *   removed at once.
 * - `withdraw` returns the bond once `evidence_blocks` and `evidence_ms` have passed since removal.
 * - `jail` (evidence from the consensus engine, ledger/evidence.ts) removes a validator's power at once.
 *
 * Power is `amount / bond_unit` while `active` or `leaving`, otherwise 0.
 */
import { defineMachine, type MachineEnv, type Step } from "./machine.ts";
import { reject } from "../core/errors.ts";

/** The parameters the validator lifecycle reads. */
export interface ValidatorParams {
  readonly epoch_blocks: number;
  readonly activation_blocks: number;
  readonly evidence_blocks: number;
  readonly evidence_ms: number;
}

/** A validator's lifecycle state. */
export type ValidatorState =
  | { readonly status: "pending"; readonly activation_height: number }
  | { readonly status: "active" }
  | { readonly status: "leaving"; readonly leave_height: number }
  | { readonly status: "cooldown"; readonly removed_height: number; readonly removed_time: number }
  | { readonly status: "withdrawn"; readonly withdrawn_height: number }
  | { readonly status: "jailed"; readonly jailed_height: number };

/** What happens to a validator: transactions (`unbond`, `withdraw`), height ticks and evidence. */
export type ValidatorEvent =
  | { readonly type: "tick" }
  | { readonly type: "unbond"; readonly others_active: number }
  | { readonly type: "withdraw" }
  | { readonly type: "jail" };

/** The first epoch boundary at or after `height` (a boundary is a multiple of `epoch_blocks`). */
export function boundaryAtOrAfter(height: number, epochBlocks: number): number {
  return Math.ceil(height / epochBlocks) * epochBlocks;
}

/** The state of a validator bonded at `env.height`. */
export function bonded(env: MachineEnv<ValidatorParams>): ValidatorState {
  return {
    status: "pending",
    activation_height: boundaryAtOrAfter(env.height + env.params.activation_blocks, env.params.epoch_blocks),
  };
}

/** True when a validator in `state` votes (has power). */
export function hasPower(state: ValidatorState): boolean {
  return state.status === "active" || state.status === "leaving";
}

function removed(env: MachineEnv<ValidatorParams>): ValidatorState {
  return { status: "cooldown", removed_height: env.height, removed_time: env.time };
}

function transition(
  state: ValidatorState,
  event: ValidatorEvent,
  env: MachineEnv<ValidatorParams>,
): Step<ValidatorState> {
  const same = { ok: true as const, state };
  switch (event.type) {
    case "tick":
      if (state.status === "pending" && env.height >= state.activation_height) {
        return { ok: true, state: { status: "active" } };
      }
      if (state.status === "leaving" && env.height >= state.leave_height) {
        return { ok: true, state: removed(env) };
      }
      return same;
    case "unbond":
      if (state.status === "pending" || state.status === "jailed") return { ok: true, state: removed(env) };
      if (state.status !== "active") {
        return reject(
          "invalid_transition",
          `Cannot unbond validator: status is ${state.status}, expected active`,
        );
      }
      if (event.others_active < 1) {
        return reject("last_validator", "Cannot unbond validator: it is the last active validator");
      }
      return {
        ok: true,
        state: {
          status: "leaving",
          leave_height: boundaryAtOrAfter(env.height + 1, env.params.epoch_blocks),
        },
      };
    case "withdraw": {
      if (state.status === "withdrawn") {
        return reject("invalid_transition", "Cannot withdraw bond: it was withdrawn already");
      }
      if (state.status !== "cooldown") {
        return reject(
          "withdraw_too_early",
          `Cannot withdraw bond: status is ${state.status}, expected cooldown`,
        );
      }
      const height = state.removed_height + env.params.evidence_blocks;
      const time = state.removed_time + env.params.evidence_ms;
      if (env.height < height || env.time < time) {
        return reject(
          "withdraw_too_early",
          `Cannot withdraw bond: height is ${env.height} and time ${env.time}, expected at least ${height} and ${time}`,
        );
      }
      return { ok: true, state: { status: "withdrawn", withdrawn_height: env.height } };
    }
    case "jail":
      if (state.status === "active" || state.status === "leaving" || state.status === "pending") {
        return { ok: true, state: { status: "jailed", jailed_height: env.height } };
      }
      return reject("invalid_transition", `Cannot jail validator: status is ${state.status}`);
  }
}

/** The validator lifecycle machine. */
export const validatorMachine = defineMachine<ValidatorState, ValidatorEvent, ValidatorParams>({
  name: "validator",
  version: 1,
  states: ["pending", "active", "leaving", "cooldown", "withdrawn", "jailed"],
  events: ["tick", "unbond", "withdraw", "jail"],
  edges: [
    { from: "pending", event: "tick", to: "pending" },
    { from: "pending", event: "tick", to: "active" },
    { from: "active", event: "tick", to: "active" },
    { from: "leaving", event: "tick", to: "leaving" },
    { from: "leaving", event: "tick", to: "cooldown" },
    { from: "cooldown", event: "tick", to: "cooldown" },
    { from: "withdrawn", event: "tick", to: "withdrawn" },
    { from: "jailed", event: "tick", to: "jailed" },
    { from: "pending", event: "unbond", to: "cooldown" },
    { from: "active", event: "unbond", to: "leaving" },
    { from: "jailed", event: "unbond", to: "cooldown" },
    { from: "cooldown", event: "withdraw", to: "withdrawn" },
    { from: "pending", event: "jail", to: "jailed" },
    { from: "active", event: "jail", to: "jailed" },
    { from: "leaving", event: "jail", to: "jailed" },
  ],
  transition,
});
