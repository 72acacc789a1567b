/**
 * The sponsor's off-chain epoch: `collecting → proposing → training → evaluating → decided`.
 *
 * The sponsor actor journals each of these events before acting on it, so after a restart it replays its
 * journal through this machine and continues where it stopped. The attempt budget lives in the state: a
 * restart replays the same events and therefore cannot replenish it. The chain decides everything that
 * matters (activation, settlement, the gate); this machine only records what the sponsor has seen and tells it
 * what to do next (`nextAction`).
 *
 * @example
 * ```ts
 * import { epoch, nextAction, startEpoch } from "./epoch.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const s = startEpoch({ epoch: 1, attempts: 8 });
 * if (s.ok) {
 *   nextAction(s.state); // "collect"
 *   epoch.apply(s.state, { type: "collected", data_root: "d".repeat(64), documents: 96 }, { height: 1, time: 0, params: DEVNET_PARAMS });
 * }
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { defineMachine, type Step } from "./machine.ts";
import type { WorkflowParams } from "./params.ts";

/** Every state of an epoch. */
export type EpochState =
  | { readonly status: "collecting"; readonly epoch: number; readonly attempts_left: number }
  | {
    readonly status: "proposing";
    readonly epoch: number;
    readonly attempts_left: number;
    readonly data_root: string;
    readonly documents: number;
    readonly proposal_id: string | null;
  }
  | {
    readonly status: "training";
    readonly epoch: number;
    readonly attempts_left: number;
    readonly data_root: string;
    readonly steps: number;
    readonly settled: number;
    /** The step being worked on and its reservation, or null between steps. */
    readonly current: { readonly index: number; readonly assignment_id: string } | null;
  }
  | {
    readonly status: "evaluating";
    readonly epoch: number;
    readonly attempts_left: number;
    readonly data_root: string;
    readonly evaluation_id: string | null;
  }
  | {
    readonly status: "decided";
    readonly epoch: number;
    readonly attempts_left: number;
    readonly outcome: "promoted" | "kept" | "abandoned";
    readonly reason: string;
  };

/** Every event of an epoch, as the sponsor journals it. */
export type EpochEvent =
  | { readonly type: "collected"; readonly data_root: string; readonly documents: number }
  | { readonly type: "proposed"; readonly proposal_id: string }
  | { readonly type: "proposal_expired" }
  | { readonly type: "activated"; readonly steps: number }
  | { readonly type: "reserved"; readonly index: number; readonly assignment_id: string }
  | { readonly type: "step_settled"; readonly index: number }
  | { readonly type: "step_failed"; readonly index: number; readonly reason: string }
  | { readonly type: "evaluation_opened"; readonly evaluation_id: string }
  | { readonly type: "evaluation_decided"; readonly promoted: boolean };

/** What the sponsor should do next in a state. */
export type EpochAction =
  | "collect"
  | "propose"
  | "await_activation"
  | "reserve"
  | "compute_and_claim"
  | "open_evaluation"
  | "await_decision"
  | "done";

/** Starts an epoch with an attempt budget: the most reservations it may make. */
export function startEpoch(input: { epoch: number; attempts: number }): Step<EpochState> {
  if (
    !Number.isSafeInteger(input.epoch) || input.epoch < 0 || !Number.isSafeInteger(input.attempts) ||
    input.attempts < 1
  ) {
    return reject(
      "bad_request",
      `Cannot start epoch: epoch is ${input.epoch} and attempts ${input.attempts}`,
    );
  }
  return { ok: true, state: { status: "collecting", epoch: input.epoch, attempts_left: input.attempts } };
}

/** The sponsor's next action in `state`. */
export function nextAction(state: EpochState): EpochAction {
  switch (state.status) {
    case "collecting":
      return "collect";
    case "proposing":
      return state.proposal_id === null ? "propose" : "await_activation";
    case "training":
      return state.current === null ? "reserve" : "compute_and_claim";
    case "evaluating":
      return state.evaluation_id === null ? "open_evaluation" : "await_decision";
    case "decided":
      return "done";
  }
}

/** The epoch machine. */
export const epoch = defineMachine<EpochState, EpochEvent, WorkflowParams>({
  name: "epoch",
  version: 1,
  states: ["collecting", "proposing", "training", "evaluating", "decided"],
  events: [
    "collected",
    "proposed",
    "proposal_expired",
    "activated",
    "reserved",
    "step_settled",
    "step_failed",
    "evaluation_opened",
    "evaluation_decided",
  ],
  edges: [
    { from: "collecting", event: "collected", to: "proposing" },
    { from: "proposing", event: "proposed", to: "proposing" },
    { from: "proposing", event: "proposal_expired", to: "collecting" },
    { from: "proposing", event: "activated", to: "training" },
    { from: "training", event: "reserved", to: "training" },
    { from: "training", event: "step_settled", to: "training" },
    { from: "training", event: "step_settled", to: "evaluating" },
    { from: "training", event: "step_failed", to: "training" },
    { from: "training", event: "step_failed", to: "decided" },
    { from: "evaluating", event: "evaluation_opened", to: "evaluating" },
    { from: "evaluating", event: "evaluation_decided", to: "decided" },
  ],
  transition(state, event): Step<EpochState> {
    const no = (why: string) =>
      reject("invalid_transition", `Cannot record ${event.type} in epoch ${state.epoch}: ${why}`);
    const { epoch: n, attempts_left } = state;
    switch (state.status) {
      case "collecting":
        if (event.type !== "collected") return no("it is collecting");
        if (!isRoot(event.data_root) || !Number.isSafeInteger(event.documents) || event.documents < 1) {
          return reject(
            "bad_request",
            `Cannot record collected in epoch ${n}: data root ${event.data_root} with ${event.documents} documents`,
          );
        }
        return ok({
          status: "proposing",
          epoch: n,
          attempts_left,
          data_root: event.data_root,
          documents: event.documents,
          proposal_id: null,
        });
      case "proposing":
        if (event.type === "proposed") {
          if (state.proposal_id !== null) {
            return reject(
              "busy",
              `Cannot record proposed in epoch ${n}: proposal ${state.proposal_id} is live`,
            );
          }
          if (!isRoot(event.proposal_id)) {
            return reject(
              "bad_request",
              `Cannot record proposed in epoch ${n}: id ${event.proposal_id} is not a root`,
            );
          }
          return ok({ ...state, proposal_id: event.proposal_id });
        }
        if (state.proposal_id === null) return no("no proposal was submitted");
        if (event.type === "proposal_expired") return ok({ status: "collecting", epoch: n, attempts_left });
        if (event.type !== "activated") return no("it is proposing");
        if (!Number.isSafeInteger(event.steps) || event.steps < 1 || event.steps > 64) {
          return reject(
            "bad_request",
            `Cannot record activated in epoch ${n}: ${event.steps} steps, expected 1-64`,
          );
        }
        return ok({
          status: "training",
          epoch: n,
          attempts_left,
          data_root: state.data_root,
          steps: event.steps,
          settled: 0,
          current: null,
        });
      case "training":
        if (event.type === "reserved") {
          if (state.current !== null) {
            return reject(
              "busy",
              `Cannot record reserved in epoch ${n}: step ${state.current.index} is reserved`,
            );
          }
          if (event.index !== state.settled) {
            return reject(
              "bad_request",
              `Cannot record reserved in epoch ${n}: step is ${event.index}, expected ${state.settled}`,
            );
          }
          if (attempts_left < 1) {
            return reject("budget_exhausted", `Cannot record reserved in epoch ${n}: no attempts left`);
          }
          if (!isRoot(event.assignment_id)) {
            return reject(
              "bad_request",
              `Cannot record reserved in epoch ${n}: id ${event.assignment_id} is not a root`,
            );
          }
          return ok({
            ...state,
            attempts_left: attempts_left - 1,
            current: { index: event.index, assignment_id: event.assignment_id },
          });
        }
        if (event.type !== "step_settled" && event.type !== "step_failed") return no("it is training");
        if (state.current === null || state.current.index !== event.index) {
          return reject(
            "not_found",
            `Cannot record ${event.type} in epoch ${n}: step ${event.index} is not reserved`,
          );
        }
        if (event.type === "step_failed") {
          if (attempts_left === 0) {
            return ok({
              status: "decided",
              epoch: n,
              attempts_left,
              outcome: "abandoned",
              reason: `step ${event.index} failed with no attempts left: ${event.reason}`,
            });
          }
          return ok({ ...state, current: null });
        }
        if (state.settled + 1 === state.steps) {
          return ok({
            status: "evaluating",
            epoch: n,
            attempts_left,
            data_root: state.data_root,
            evaluation_id: null,
          });
        }
        return ok({ ...state, settled: state.settled + 1, current: null });
      case "evaluating":
        if (event.type === "evaluation_opened") {
          if (state.evaluation_id !== null) {
            return reject(
              "busy",
              `Cannot record evaluation_opened in epoch ${n}: evaluation ${state.evaluation_id} is open`,
            );
          }
          if (!isRoot(event.evaluation_id)) {
            return reject(
              "bad_request",
              `Cannot record evaluation_opened in epoch ${n}: id ${event.evaluation_id} is not a root`,
            );
          }
          return ok({ ...state, evaluation_id: event.evaluation_id });
        }
        if (event.type !== "evaluation_decided") return no("it is evaluating");
        if (state.evaluation_id === null) return no("no evaluation was opened");
        return ok({
          status: "decided",
          epoch: n,
          attempts_left,
          outcome: event.promoted ? "promoted" : "kept",
          reason: event.promoted ? "the gate passed" : "the gate failed or the evaluation expired",
        });
      case "decided":
        return no("it is decided");
    }
  },
});

function ok(state: EpochState): Step<EpochState> {
  return { ok: true, state };
}
