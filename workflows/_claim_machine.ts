/**
 * A lifecycle that is one claim and nothing else (growth, score): the claim phase of `_claim.ts` carrying a
 * fixed payload, under one key, unchanged from `claimed` to `settled`, `rejected` or `expired`. Private to
 * `workflows/`.
 */
import { reject } from "../core/errors.ts";
import { defineMachine, type Machine, type Step } from "./machine.ts";
import type { Move } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { type Claim, claimEdges, type ClaimEvent, type LiveStatus, liveStatus, stepClaim } from "./_claim.ts";

/** The states of a claim-only lifecycle whose payload sits under key `K`. */
export type ClaimOnlyState<K extends string, V> =
  | (
    & { readonly status: LiveStatus | "settled" | "expired"; readonly claim: Claim; readonly moves: Move[] }
    & { readonly [P in K]: V }
  )
  | (
    & { readonly status: "rejected"; readonly claim: Claim; readonly reason: string; readonly moves: Move[] }
    & { readonly [P in K]: V }
  );

/** The statuses of a claim-only lifecycle. */
type Status = LiveStatus | "settled" | "rejected" | "expired";

/** The shape the transition works on; the payload is carried through untouched. */
type Loose = {
  readonly status: Status;
  readonly claim: Claim;
  readonly moves: Move[];
  readonly reason?: string;
};

/** Defines the machine `name` whose states carry their payload under `key`. */
export function defineClaimOnlyMachine<K extends string, V>(
  name: string,
  key: K,
): Machine<ClaimOnlyState<K, V>, ClaimEvent, WorkflowParams> {
  const machine = defineMachine<Loose, ClaimEvent, WorkflowParams>({
    name,
    version: 1,
    states: ["claimed", "challenged", "uploading", "resolving", "settled", "rejected", "expired"],
    events: ["challenge", "upload", "seal", "resolve", "tick"],
    edges: claimEdges({
      accepted: "settled" as const,
      rejected: "rejected" as const,
      expired: "expired" as const,
    }),
    transition(state, event, env): Step<Loose> {
      if (state.status === "settled" || state.status === "rejected" || state.status === "expired") {
        return reject(
          "invalid_transition",
          `Cannot ${event.type} ${name} ${state.claim.id}: it is ${state.status}`,
        );
      }
      const r = stepClaim(state.claim, event, env.height, env.params);
      if (!r.ok) return r;
      const payload = (state as unknown as Record<K, V>)[key];
      const next = (status: Status, reason?: string): Step<Loose> => {
        const base = { status, claim: r.claim, [key]: payload, moves: r.moves };
        return { ok: true, state: reason === undefined ? base : { ...base, reason } };
      };
      switch (r.outcome) {
        case "live":
          return next(liveStatus(r.claim));
        case "accepted":
          return next("settled");
        case "rejected":
          return next("rejected", r.reason);
        case "expired":
          return next("expired");
      }
    },
  });
  return machine as unknown as Machine<ClaimOnlyState<K, V>, ClaimEvent, WorkflowParams>;
}
