/**
 * The data cohort lifecycle (PROTOCOL §6): `proposed → voting → activated | expired`.
 *
 * `proposeData` locks the claim bond and snapshots the electorate (owner accounts with their power aggregated
 * over all their validators). Each owner votes once and cannot change its vote. At each block the ledger ticks
 * the proposal with the current electorate and whether an assignment, claim or evaluation is live; it
 * activates once `H ≥ proposed + activation_blocks` and yes-power is strictly more than 2/3 of both the
 * snapshot and the current electorate, fixing the batch schedule; past `expires` it expires (90% refunded,
 * 10% burned). The ledger checks the cohort document itself (windows, documents, uniqueness) beforehand.
 *
 * @example
 * ```ts
 * import { cohortSchedule } from "./cohort.ts";
 * cohortSchedule("d".repeat(64), ["1".repeat(64), "2".repeat(64), "3".repeat(64)], ["4".repeat(64)], 4);
 * // three fresh batches in rank order with the replay batch at step 3
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { id } from "../core/digest.ts";
import { defineMachine, type MachineEnv, type Step } from "./machine.ts";
import { burn, expiryBurn, lock, type Move, nonZero, release } from "./money.ts";
import type { WorkflowParams } from "./params.ts";

/** Owner accounts and their voting power, sorted by owner. */
export type Electorate = readonly (readonly [owner: string, power: number])[];

/** One scheduled training step: a batch root and whether it replays the previous cohort. */
export type ScheduledBatch = { readonly batch: string; readonly kind: "fresh" | "replay" };

type Common = {
  readonly id: string;
  readonly proposer: string;
  readonly data_root: string;
  readonly previous: string;
  readonly bond: number;
  readonly proposed: number;
  readonly expires: number;
  readonly electorate: Electorate;
  /** Votes as `[owner, approve]`, sorted by owner. */
  readonly votes: readonly (readonly [string, boolean])[];
  /** The cohort's training batch roots. */
  readonly train_batches: readonly string[];
  /** The previous cohort's training pool, or null when there is no previous cohort. */
  readonly replay_pool: readonly string[] | null;
  readonly moves: Move[];
};

/** Every state of a data proposal. */
export type CohortState =
  | Common & { readonly status: "proposed" | "voting" | "expired" }
  | Common & { readonly status: "activated"; readonly schedule: readonly ScheduledBatch[] };

/** Every event of a data proposal. */
export type CohortEvent =
  | { readonly type: "vote"; readonly sender: string; readonly approve: boolean }
  | { readonly type: "tick"; readonly current: Electorate; readonly busy: boolean };

/** A checked `propose_data`; `previous` is the current data root. */
export type ProposeInput = Omit<Common, "bond" | "proposed" | "expires" | "votes" | "moves">;

/** True when step `i` of `steps` is a replay step for `r` replay batches: `floor((i+1)·r/steps) > floor(i·r/steps)`. */
export function isReplayStep(i: number, r: number, steps: number): boolean {
  return Math.floor(((i + 1) * r) / steps) > Math.floor((i * r) / steps);
}

/** The replay batches a schedule of `steps` takes from a pool: `floor(steps/4)`, at most the pool's size. */
export function replayCount(steps: number, pool: readonly string[] | null): number {
  return pool === null ? 0 : Math.min(Math.floor(steps / 4), pool.length);
}

function ranked(dataRoot: string, tag: string, batches: readonly string[]): string[] {
  return batches.map((b) => [id([dataRoot, tag, b]), b] as const).sort((x, y) => (x[0] < y[0] ? -1 : 1)).map((
    x,
  ) => x[1]);
}

/**
 * The schedule fixed at activation (§6): fresh batches ranked by `id([data_root,"fresh",batch])`, replay
 * batches ranked by `id([data_root,"replay",batch])`, replay steps spread evenly.
 */
export function cohortSchedule(
  dataRoot: string,
  train: readonly string[],
  pool: readonly string[] | null,
  steps: number,
): ScheduledBatch[] {
  const r = replayCount(steps, pool);
  const fresh = ranked(dataRoot, "fresh", train);
  const replay = ranked(dataRoot, "replay", pool ?? []);
  if (fresh.length < steps - r) {
    throw new RangeError(`Cannot schedule cohort: ${fresh.length} fresh batches, ${steps - r} needed`);
  }
  let f = 0;
  let p = 0;
  return Array.from(
    { length: steps },
    (_, i): ScheduledBatch =>
      isReplayStep(i, r, steps)
        ? { batch: replay[p++]!, kind: "replay" }
        : { batch: fresh[f++]!, kind: "fresh" },
  );
}

function electorateProblem(e: Electorate): string | null {
  if (e.length === 0) return "the electorate is empty";
  for (let i = 0; i < e.length; i++) {
    const [owner, power] = e[i]!;
    if (i > 0 && e[i - 1]![0] >= owner) return "electorate owners are not sorted and unique";
    if (!Number.isSafeInteger(power) || power < 1) return `owner ${owner} has power ${power}`;
  }
  return null;
}

/** True when the owners voting yes hold strictly more than 2/3 of the electorate's power. */
export function hasQuorum(electorate: Electorate, votes: readonly (readonly [string, boolean])[]): boolean {
  const yes = new Set(votes.filter(([, approve]) => approve).map(([owner]) => owner));
  let total = 0n;
  let approving = 0n;
  for (const [owner, power] of electorate) {
    total += BigInt(power);
    if (yes.has(owner)) approving += BigInt(power);
  }
  return total > 0n && 3n * approving > 2n * total;
}

/** Creates the `proposed` state: locks `claim_bond`; `expires = H + proposal_blocks`. */
export function proposeData(input: ProposeInput, env: MachineEnv<WorkflowParams>): Step<CohortState> {
  const p = env.params;
  if (
    ![input.id, input.data_root, input.previous, ...input.train_batches, ...(input.replay_pool ?? [])].every(
      isRoot,
    )
  ) {
    return reject("invalid_proposal", "Cannot propose data: a root is not 64 lowercase hex");
  }
  const problem = electorateProblem(input.electorate);
  if (problem !== null) return reject("invalid_proposal", `Cannot propose data: ${problem}`);
  if (new Set(input.train_batches).size !== input.train_batches.length) {
    return reject("invalid_proposal", "Cannot propose data: training batch roots repeat");
  }
  const needed = p.steps_per_cohort - replayCount(p.steps_per_cohort, input.replay_pool);
  if (input.train_batches.length < needed) {
    return reject(
      "invalid_proposal",
      `Cannot propose data: ${input.train_batches.length} training batches, ${needed} needed`,
    );
  }
  const bond = p.claim_bond;
  return {
    ok: true,
    state: {
      status: "proposed",
      ...input,
      electorate: input.electorate.map(([o, w]) => [o, w] as const),
      train_batches: [...input.train_batches],
      replay_pool: input.replay_pool === null ? null : [...input.replay_pool],
      bond,
      proposed: env.height,
      expires: env.height + p.proposal_blocks,
      votes: [],
      moves: [lock(input.proposer, bond)],
    },
  };
}

/** The cohort machine. */
export const cohort = defineMachine<CohortState, CohortEvent, WorkflowParams>({
  name: "cohort",
  version: 1,
  states: ["proposed", "voting", "activated", "expired"],
  events: ["vote", "tick"],
  edges: [
    { from: "proposed", event: "vote", to: "voting" },
    { from: "proposed", event: "tick", to: "expired" },
    { from: "voting", event: "vote", to: "voting" },
    { from: "voting", event: "tick", to: "activated" },
    { from: "voting", event: "tick", to: "expired" },
  ],
  transition(state, event, env): Step<CohortState> {
    const h = env.height;
    if (state.status === "activated" || state.status === "expired") {
      return reject("invalid_transition", `Cannot ${event.type} proposal ${state.id}: it is ${state.status}`);
    }
    const { status: _s, ...common } = state;
    if (event.type === "vote") {
      if (h > state.expires) {
        return reject(
          "expired",
          `Cannot vote on proposal ${state.id}: height is ${h}, expired after ${state.expires}`,
        );
      }
      if (!state.electorate.some(([owner]) => owner === event.sender)) {
        return reject(
          "not_in_electorate",
          `Cannot vote on proposal ${state.id}: owner ${event.sender} is not in the electorate`,
        );
      }
      if (state.votes.some(([owner]) => owner === event.sender)) {
        return reject(
          "already_voted",
          `Cannot vote on proposal ${state.id}: owner ${event.sender} already voted`,
        );
      }
      const votes = [...state.votes, [event.sender, event.approve] as const].sort((
        a,
        b,
      ) => (a[0] < b[0] ? -1 : 1));
      return { ok: true, state: { ...common, status: "voting", votes, moves: [] } };
    }
    if (h > state.expires) {
      const burned = expiryBurn(state.bond);
      const moves = nonZero([release(state.proposer, state.bond - burned), burn(burned)]);
      return { ok: true, state: { ...common, status: "expired", moves } };
    }
    const problem = electorateProblem(event.current);
    if (problem !== null) return reject("bad_request", `Cannot tick proposal ${state.id}: ${problem}`);
    const ready = h >= state.proposed + env.params.activation_blocks && !event.busy &&
      hasQuorum(state.electorate, state.votes) && hasQuorum(event.current, state.votes);
    if (!ready) {
      return reject(
        "invalid_transition",
        `Cannot tick proposal ${state.id}: nothing is due at height ${h}, expires after ${state.expires}`,
      );
    }
    const schedule = cohortSchedule(
      state.data_root,
      state.train_batches,
      state.replay_pool,
      env.params.steps_per_cohort,
    );
    return {
      ok: true,
      state: { ...common, status: "activated", schedule, moves: [release(state.proposer, state.bond)] },
    };
  },
});
