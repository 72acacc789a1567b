/**
 * The evaluation lifecycle and the serving decision (PROTOCOL §7): `open → scoring → decided`.
 *
 * `openEvaluation` binds baseline (serving root), candidate (learning root), the cohort and `expires`, with the
 * window layout of the cohort's retention and fresh documents (32 of each unless the genesis `data` section sets
 * `evaluation_documents`). Each group (side × role) is scored in
 * order by score claims (`workflows/score.ts`) of ≤ 4 windows; the ledger feeds `score` when one is submitted,
 * `score_settled` with its losses when it settles and `score_failed` when it is rejected or expires.
 * `finish` applies the integer gate (`workflows/gate.ts`); a tick past `expires` fails the evaluation.
 * In `decided`, `promoted` tells the ledger whether the serving root becomes the candidate.
 *
 * @example
 * ```ts
 * import { evaluation, openEvaluation } from "./evaluation.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const docs = Array.from({ length: 32 }, (_, i) => i); // one window per document
 * const env = { height: 1, time: 0, params: DEVNET_PARAMS };
 * const open = openEvaluation({ id: "1".repeat(64), baseline: "2".repeat(64), candidate: "3".repeat(64), data_root: "4".repeat(64), layout: { retention: docs, fresh: docs } }, env);
 * if (open.ok) evaluation.apply(open.state, { type: "score", claim_id: "5".repeat(64), side: "baseline", role: "fresh", offset: 0, windows: 4 }, env);
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { defineMachine, type MachineEnv, type Step } from "./machine.ts";
import type { Move } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { documentLoss, FRESH_MARGIN, type GateResult, groupGate, microQ, RETENTION_MARGIN } from "./gate.ts";
import { scoredProblem, WINDOWS_PER_SCORE } from "./score.ts";

/** Paired documents per evaluation role unless the genesis `data.evaluation_documents` sets another count. */
export const EVAL_DOCUMENTS = 32;
/** Most windows per evaluation document. */
export const WINDOWS_PER_DOCUMENT = 4;

/** The four groups, in the order they are reported. */
export const GROUPS = [
  "baseline_retention",
  "baseline_fresh",
  "candidate_retention",
  "candidate_fresh",
] as const;
/** A group name: side and role. */
export type GroupName = typeof GROUPS[number];

/** Progress of one group: settled windows' losses and targets, and the pending score claim if any. */
export type Group = {
  readonly losses: readonly string[];
  readonly targets: readonly number[];
  readonly pending: string | null;
};

/** The document index of each window, per role (the same for both sides). */
export type Layout = { readonly retention: readonly number[]; readonly fresh: readonly number[] };

type Common = {
  readonly id: string;
  readonly baseline: string;
  readonly candidate: string;
  readonly data_root: string;
  readonly expires: number;
  readonly layout: Layout;
  readonly groups: { readonly [G in GroupName]: Group };
  readonly moves: Move[];
};

/** Every state of an evaluation. */
export type EvaluationState =
  | Common & { readonly status: "open" | "scoring" }
  | Common & {
    readonly status: "decided";
    readonly promoted: boolean;
    readonly reason: "gate" | "expired";
    readonly gate: { readonly retention: GateResult; readonly fresh: GateResult } | null;
  };

/** Every event of an evaluation. */
export type EvaluationEvent =
  | {
    readonly type: "score";
    readonly claim_id: string;
    readonly side: "baseline" | "candidate";
    readonly role: "retention" | "fresh";
    readonly offset: number;
    readonly windows: number;
  }
  | {
    readonly type: "score_settled";
    readonly claim_id: string;
    readonly losses: readonly string[];
    readonly targets: readonly number[];
  }
  | { readonly type: "score_failed"; readonly claim_id: string }
  | { readonly type: "finish" }
  | { readonly type: "tick" };

/** A checked `open_evaluation`: every scheduled step is settled. */
export type OpenInput = {
  id: string;
  baseline: string;
  candidate: string;
  data_root: string;
  layout: Layout;
};

/** The documents a checked layout's windows belong to (the last window's document + 1). */
export function layoutDocuments(windows: readonly number[]): number {
  return windows.length === 0 ? 0 : windows[windows.length - 1]! + 1;
}

function layoutProblem(windows: readonly number[], documents: number): string | null {
  let count = 0;
  for (let i = 0; i < windows.length; i++) {
    const doc = windows[i]!;
    const prev = i === 0 ? -1 : windows[i - 1]!;
    if (doc === prev) count += 1;
    else if (doc === prev + 1) count = 1;
    else return `window ${i} belongs to document ${doc} after document ${prev}`;
    if (count > WINDOWS_PER_DOCUMENT) return `document ${doc} has more than ${WINDOWS_PER_DOCUMENT} windows`;
  }
  const docs = layoutDocuments(windows);
  return docs === documents ? null : `${docs} documents, expected ${documents}`;
}

/**
 * Creates the `open` state: `expires = H + evaluation_blocks`; each role's layout must cover exactly
 * `documents` documents (the chain's evaluation documents per role).
 */
export function openEvaluation(
  input: OpenInput,
  env: MachineEnv<WorkflowParams>,
  documents: number = EVAL_DOCUMENTS,
): Step<EvaluationState> {
  if (![input.id, input.baseline, input.candidate, input.data_root].every(isRoot)) {
    return reject("bad_request", "Cannot open evaluation: a root is not 64 lowercase hex");
  }
  for (const role of ["retention", "fresh"] as const) {
    const problem = layoutProblem(input.layout[role], documents);
    if (problem !== null) {
      return reject("bad_request", `Cannot open evaluation: ${role} layout has ${problem}`);
    }
  }
  const empty: Group = { losses: [], targets: [], pending: null };
  return {
    ok: true,
    state: {
      status: "open",
      ...input,
      layout: { retention: [...input.layout.retention], fresh: [...input.layout.fresh] },
      expires: env.height + env.params.evaluation_blocks,
      groups: {
        baseline_retention: empty,
        baseline_fresh: empty,
        candidate_retention: empty,
        candidate_fresh: empty,
      },
      moves: [],
    },
  };
}

/** Applies the gate to settled groups: per-document losses, q, then both groups' integer test. */
export function decide(layout: Layout, groups: { readonly [G in GroupName]: Group }): {
  promoted: boolean;
  gate: { retention: GateResult; fresh: GateResult };
} {
  const qs = (group: Group, windows: readonly number[]) => {
    const docs: { loss: number; targets: number }[][] = Array.from(
      { length: layoutDocuments(windows) },
      () => [],
    );
    windows.forEach((doc, i) =>
      docs[doc]!.push({ loss: fromHexFloat(group.losses[i]!), targets: group.targets[i]! })
    );
    return docs.map((w) => microQ(documentLoss(w)));
  };
  const retention = groupGate(
    qs(groups.baseline_retention, layout.retention),
    qs(groups.candidate_retention, layout.retention),
    RETENTION_MARGIN,
  );
  const fresh = groupGate(
    qs(groups.baseline_fresh, layout.fresh),
    qs(groups.candidate_fresh, layout.fresh),
    FRESH_MARGIN,
  );
  return { promoted: retention.pass && fresh.pass, gate: { retention, fresh } };
}

/** The evaluation machine. */
export const evaluation = defineMachine<EvaluationState, EvaluationEvent, WorkflowParams>({
  name: "evaluation",
  version: 1,
  states: ["open", "scoring", "decided"],
  events: ["score", "score_settled", "score_failed", "finish", "tick"],
  edges: [
    { from: "open", event: "score", to: "scoring" },
    { from: "open", event: "tick", to: "decided" },
    { from: "scoring", event: "score", to: "scoring" },
    { from: "scoring", event: "score_settled", to: "scoring" },
    { from: "scoring", event: "score_failed", to: "scoring" },
    { from: "scoring", event: "finish", to: "decided" },
    { from: "scoring", event: "tick", to: "decided" },
  ],
  transition(state, event, env): Step<EvaluationState> {
    const h = env.height;
    if (state.status === "decided") {
      return reject("invalid_transition", `Cannot ${event.type} evaluation ${state.id}: it is decided`);
    }
    const { status: _status, ...common } = state;
    switch (event.type) {
      case "tick":
        if (h <= state.expires) {
          return reject(
            "invalid_transition",
            `Cannot tick evaluation ${state.id}: nothing is due at height ${h}, expires after ${state.expires}`,
          );
        }
        return {
          ok: true,
          state: { ...common, status: "decided", promoted: false, reason: "expired", gate: null, moves: [] },
        };
      case "score": {
        if (h > state.expires) {
          return reject(
            "expired",
            `Cannot score evaluation ${state.id}: height is ${h}, expired after ${state.expires}`,
          );
        }
        const name = `${event.side}_${event.role}` as GroupName;
        if (!GROUPS.includes(name)) {
          return reject("bad_request", `Cannot score evaluation ${state.id}: group ${name} does not exist`);
        }
        const group = state.groups[name];
        if (group.pending !== null) {
          return reject(
            "busy",
            `Cannot score ${name} of evaluation ${state.id}: score ${group.pending} is pending`,
          );
        }
        const total = state.layout[event.role].length;
        const expected = Math.min(WINDOWS_PER_SCORE, total - group.losses.length);
        if (event.offset !== group.losses.length || event.windows !== expected || expected === 0) {
          return reject(
            "bad_request",
            `Cannot score ${name} of evaluation ${state.id}: offset ${event.offset} with ${event.windows} windows, expected offset ${group.losses.length} with ${expected}`,
          );
        }
        return withGroup(common, name, { ...group, pending: event.claim_id });
      }
      case "score_settled":
      case "score_failed": {
        const name = GROUPS.find((g) => state.groups[g].pending === event.claim_id);
        if (name === undefined) {
          return reject(
            "not_found",
            `Cannot settle score ${event.claim_id} of evaluation ${state.id}: it is not pending`,
          );
        }
        const group = state.groups[name];
        if (event.type === "score_failed") return withGroup(common, name, { ...group, pending: null });
        const role = name.endsWith("retention") ? "retention" : "fresh";
        const expected = Math.min(WINDOWS_PER_SCORE, state.layout[role].length - group.losses.length);
        const problem = scoredProblem({ ...event, offset: group.losses.length }) ??
          (event.losses.length === expected ? null : `${event.losses.length} losses, expected ${expected}`);
        if (problem !== null) {
          return reject("invalid_record", `Cannot settle score ${event.claim_id}: ${problem}`);
        }
        return withGroup(common, name, {
          losses: [...group.losses, ...event.losses],
          targets: [...group.targets, ...event.targets],
          pending: null,
        });
      }
      case "finish": {
        const open = GROUPS.filter((g) => {
          const role = g.endsWith("retention") ? "retention" : "fresh";
          return state.groups[g].pending !== null ||
            state.groups[g].losses.length !== state.layout[role].length;
        });
        if (open.length > 0 || state.status !== "scoring") {
          return reject(
            "invalid_transition",
            `Cannot finish evaluation ${state.id}: groups ${open.join(",")} are not fully settled`,
          );
        }
        const { promoted, gate } = decide(state.layout, state.groups);
        return {
          ok: true,
          state: { ...common, status: "decided", promoted, reason: "gate", gate, moves: [] },
        };
      }
    }
  },
});

function withGroup(
  common: Omit<EvaluationState, "status">,
  name: GroupName,
  group: Group,
): Step<EvaluationState> {
  const c = common as Common;
  return { ok: true, state: { ...c, status: "scoring", groups: { ...c.groups, [name]: group }, moves: [] } };
}
