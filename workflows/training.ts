/**
 * The training lifecycle (PROTOCOL §5): one assignment and the claim that follows it.
 *
 * `reserve` creates the `reserved` state; `claim` turns it into a claim with a challenge window; challenges,
 * uploads, seals and the referee's verdict move it through `challenged → uploading → resolving`; height ticks
 * decide every deadline (`H > deadline`). Terminal states: `settled` (accepted, reward minted), `rejected`
 * (slashed) and `expired` (lease or claim lifetime passed). Every state carries `moves`: what the ledger must
 * lock, release, burn or mint for the transition that produced it.
 *
 * Checks that need data the machine cannot see (signatures, receipts, graph checks, the referee replay, the
 * paid-work index, budgets) are made by the ledger before it feeds the event.
 *
 * @example
 * ```ts
 * import { reserve, training } from "./training.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const env = { height: 10, time: 0, params: DEVNET_PARAMS };
 * const r = reserve({ id: "a".repeat(64), owner: "o", workers: ["w"], data_root: "d".repeat(64), sequence_index: 0, batch: "b".repeat(64) }, env);
 * if (r.ok) training.apply(r.state, { type: "tick" }, { ...env, height: 51 }); // lease expired
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { MAX_WORKERS } from "../core/limits.ts";
import { defineMachine, type MachineEnv, type Step } from "./machine.ts";
import { burn, expiryBurn, lock, type Move, nonZero, release, rewardMoves } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { type Claim, claimEdges, type ClaimEvent, liveStatus, openClaim, stepClaim } from "./_claim.ts";

/** A reservation: who may claim which batch with which workers, until when. */
export type Assignment = {
  readonly id: string;
  readonly owner: string;
  readonly workers: readonly string[];
  readonly data_root: string;
  readonly sequence_index: number;
  readonly batch: string;
  readonly bond: number;
  readonly expires: number;
};

/** What a claim says was computed; the ledger stores the metadata itself under `metadata_root`. */
export type Work = {
  readonly record_root: string;
  readonly model_root: string;
  readonly work_identity: string;
  readonly metadata_root: string;
};

/** Every state of a training job. */
export type TrainingState =
  | { readonly status: "reserved"; readonly assignment: Assignment; readonly moves: Move[] }
  | {
    readonly status: "claimed" | "challenged" | "uploading" | "resolving" | "settled";
    readonly assignment: Assignment;
    readonly claim: Claim;
    readonly work: Work;
    readonly moves: Move[];
  }
  | {
    readonly status: "rejected";
    readonly assignment: Assignment;
    readonly claim: Claim;
    readonly work: Work;
    readonly reason: string;
    readonly moves: Move[];
  }
  | {
    readonly status: "expired";
    readonly assignment: Assignment;
    readonly claim: Claim | null;
    readonly work: Work | null;
    readonly moves: Move[];
  };

/** `claim`: the ledger has checked the receipts, the graph and that the work identity was never paid. */
export type ClaimTx = {
  readonly type: "claim";
  readonly sender: string;
  readonly claim_id: string;
  readonly workers: readonly string[];
  readonly data_root: string;
  readonly sequence_index: number;
} & Work;

/** Every event of a training job. */
export type TrainingEvent = ClaimTx | ClaimEvent;

/** The fields of a `reserve` the ledger has checked against its global state (budget, parent, round, batch). */
export type ReserveInput = Omit<Assignment, "bond" | "expires">;

/** Creates the `reserved` state: locks `claim_bond` and sets `expires = H + lease_blocks`. */
export function reserve(input: ReserveInput, env: MachineEnv<WorkflowParams>): Step<TrainingState> {
  const w = input.workers;
  if (w.length < 1 || w.length > MAX_WORKERS || new Set(w).size !== w.length || w.some((k) => k === "")) {
    return reject(
      "invalid_workers",
      `Cannot reserve: ${w.length} workers given, expected 1-${MAX_WORKERS} distinct keys`,
    );
  }
  if (!isRoot(input.data_root) || !isRoot(input.batch) || !Number.isSafeInteger(input.sequence_index)) {
    return reject(
      "no_batch",
      `Cannot reserve: batch ${input.batch} of data ${input.data_root} is not a scheduled batch`,
    );
  }
  const bond = env.params.claim_bond;
  const assignment: Assignment = {
    ...input,
    workers: [...w],
    bond,
    expires: env.height + env.params.lease_blocks,
  };
  return { ok: true, state: { status: "reserved", assignment, moves: [lock(input.owner, bond)] } };
}

/** The training machine. */
export const training = defineMachine<TrainingState, TrainingEvent, WorkflowParams>({
  name: "training",
  version: 1,
  states: ["reserved", "claimed", "challenged", "uploading", "resolving", "settled", "rejected", "expired"],
  events: ["claim", "challenge", "upload", "seal", "resolve", "tick"],
  edges: [
    { from: "reserved", event: "claim", to: "claimed" },
    { from: "reserved", event: "tick", to: "expired" },
    ...claimEdges({
      accepted: "settled" as const,
      rejected: "rejected" as const,
      expired: "expired" as const,
    }),
  ],
  transition(state, event, env): Step<TrainingState> {
    const h = env.height;
    if (state.status === "reserved") {
      const a = state.assignment;
      if (event.type === "tick") {
        if (h <= a.expires) {
          return reject(
            "invalid_transition",
            `Cannot tick assignment ${a.id}: nothing is due at height ${h}, expires after ${a.expires}`,
          );
        }
        const burned = expiryBurn(a.bond);
        const moves = nonZero([release(a.owner, a.bond - burned), burn(burned)]);
        return { ok: true, state: { status: "expired", assignment: a, claim: null, work: null, moves } };
      }
      if (event.type !== "claim") {
        return reject(
          "invalid_transition",
          `Cannot ${event.type} assignment ${a.id}: it is reserved, not claimed`,
        );
      }
      return claimAssignment(a, event, env);
    }
    if (state.status === "settled" || state.status === "rejected" || state.status === "expired") {
      return reject(
        "invalid_transition",
        `Cannot ${event.type} training job ${state.assignment.id}: it is ${state.status}`,
      );
    }
    if (event.type === "claim") {
      return reject(
        "busy",
        `Cannot claim assignment ${state.assignment.id}: claim ${state.claim.id} is pending`,
      );
    }
    const r = stepClaim(state.claim, event, h, env.params);
    if (!r.ok) return r;
    const base = { assignment: state.assignment, claim: r.claim, work: state.work };
    switch (r.outcome) {
      case "live":
        return { ok: true, state: { status: liveStatus(r.claim), ...base, moves: r.moves } };
      case "accepted": {
        const reward = rewardMoves(
          env.params.reward,
          env.params.verifier_share_bps,
          state.assignment.workers,
        );
        return { ok: true, state: { status: "settled", ...base, moves: [...r.moves, ...reward] } };
      }
      case "rejected":
        return { ok: true, state: { status: "rejected", ...base, reason: r.reason, moves: r.moves } };
      case "expired":
        return { ok: true, state: { status: "expired", ...base, moves: r.moves } };
    }
  },
});

function claimAssignment(a: Assignment, ev: ClaimTx, env: MachineEnv<WorkflowParams>): Step<TrainingState> {
  const h = env.height;
  if (ev.sender !== a.owner) {
    return reject(
      "not_owner",
      `Cannot claim assignment ${a.id}: sender is ${ev.sender}, owner is ${a.owner}`,
    );
  }
  if (h > a.expires) {
    return reject("expired", `Cannot claim assignment ${a.id}: height is ${h}, expired after ${a.expires}`);
  }
  if (ev.workers.length !== a.workers.length || ev.workers.some((w, i) => w !== a.workers[i])) {
    return reject(
      "invalid_workers",
      `Cannot claim assignment ${a.id}: workers are [${ev.workers.join(",")}], reserved [${
        a.workers.join(",")
      }]`,
    );
  }
  if (ev.data_root !== a.data_root || ev.sequence_index !== a.sequence_index) {
    return reject(
      "invalid_record",
      `Cannot claim assignment ${a.id}: data is ${ev.data_root}#${ev.sequence_index}, reserved ${a.data_root}#${a.sequence_index}`,
    );
  }
  const roots = [ev.claim_id, ev.record_root, ev.model_root, ev.work_identity, ev.metadata_root];
  if (!roots.every(isRoot)) {
    return reject("invalid_record", `Cannot claim assignment ${a.id}: a root is not 64 lowercase hex`);
  }
  const claim = openClaim(
    {
      id: ev.claim_id,
      owner: a.owner,
      bond: a.bond,
      stages: a.workers.length,
      expires: h + env.params.max_claim_blocks,
    },
    h,
    env.params,
  );
  const work: Work = {
    record_root: ev.record_root,
    model_root: ev.model_root,
    work_identity: ev.work_identity,
    metadata_root: ev.metadata_root,
  };
  return { ok: true, state: { status: "claimed", assignment: a, claim, work, moves: [] } };
}
