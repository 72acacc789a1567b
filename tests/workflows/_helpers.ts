/** Shared helpers for the workflow machine tests: environments, roots and edge coverage. */
import assert from "node:assert/strict";
import { canonical, decodeCanonical } from "../../core/canonical.ts";
import {
  type Machine,
  type MachineEnv,
  type MachineEvent,
  type MachineState,
  stateHash,
  type Step,
} from "../../workflows/machine.ts";
import { DEVNET_PARAMS, type WorkflowParams } from "../../workflows/params.ts";

/** An environment at height `height` with the devnet parameters (or overrides). */
export function env(height: number, params: Partial<WorkflowParams> = {}): MachineEnv<WorkflowParams> {
  return { height, time: 1_700_000_000_000 + height * 1000, params: { ...DEVNET_PARAMS, ...params } };
}

/** A 64-hex root made of one repeated hex digit, or of a small number. */
export function root(n: number | string): string {
  return typeof n === "string" ? n.repeat(64 / n.length) : n.toString(16).padStart(64, "0");
}

/** Records which declared edges a test file exercised, so a final test can require all of them. */
export class Coverage<S extends MachineState, E extends MachineEvent, P> {
  readonly taken = new Set<string>();
  constructor(readonly machine: Machine<S, E, P>) {}

  /** Applies an event that must be accepted, recording its edge. */
  ok(state: S, event: E, e: MachineEnv<P>): S {
    const step = this.machine.apply(state, event, e);
    if (!step.ok) {
      throw new Error(
        `expected ${state.status} -${event.type}-> to be accepted: ${step.code} ${step.message}`,
      );
    }
    this.taken.add(`${state.status} -${event.type}-> ${step.state.status}`);
    // Every state must survive canonical JSON exactly, since journals and the ledger hash it.
    assert.deepEqual(decodeCanonical(canonical(step.state)), step.state);
    assert.match(stateHash(step.state), /^[0-9a-f]{64}$/);
    return step.state;
  }

  /** Applies an event that must be rejected with `code`, and checks the state is unchanged. */
  rejects(state: S, event: E, e: MachineEnv<P>, code: string): Step<S> {
    const before = structuredClone(state);
    const step = this.machine.apply(state, event, e);
    assert.equal(step.ok, false, `expected ${state.status} -${event.type}-> to be rejected with ${code}`);
    if (!step.ok) {
      assert.equal(step.code, code, step.message);
      assert.ok(step.message.startsWith("Cannot "), step.message);
      assert.ok(!step.message.endsWith("."), step.message);
    }
    assert.deepEqual(state, before);
    return step;
  }

  /** Declared edges not exercised yet. */
  missing(): string[] {
    return this.machine.edges.map((e) => `${e.from} -${e.event}-> ${e.to}`).filter((k) => !this.taken.has(k));
  }
}

/**
 * Drives a claim-phase machine (growth, score) through every claim edge. `fresh()` returns a new claimed state
 * created at height `h0` by `owner` with one stage, under the devnet parameters (window 6, challenge deadline
 * +20, lifetime 120).
 */
export function exerciseClaimPhase<S extends MachineState, E extends MachineEvent, P>(
  cov: Coverage<S, E, P>,
  fresh: () => S,
  h0: number,
  owner: string,
): void {
  const at = (d: number) => env(h0 + d) as unknown as MachineEnv<P>;
  const ev = (e: unknown) => e as E;
  const obj = root(0xabc);
  const fraud = ev({
    type: "challenge",
    sender: "ref",
    kind: "fraud",
    stage: 0,
    block: null,
    phase: null,
    object_root: null,
    needed: [obj],
  });
  const avail = ev({
    type: "challenge",
    sender: "ref",
    kind: "availability",
    stage: 0,
    block: null,
    phase: null,
    object_root: obj,
    needed: [obj],
  });
  const up = (sender: string, o = obj) => ev({ type: "upload", sender, object_root: o, index: 0, size: 3 });
  const seal = (sender: string, o = obj) => ev({ type: "seal", sender, object_root: o, digest: o });
  const tick = ev({ type: "tick" });
  const expect = (s: S, status: string) => assert.equal(s.status, status);

  expect(cov.ok(fresh(), tick, at(7)), "settled");
  const challenged = cov.ok(fresh(), fraud, at(1));
  const uploading = cov.ok(challenged, up("ref"), at(2));
  const resolving = cov.ok(uploading, seal("ref"), at(2));
  expect(resolving, "resolving");
  expect(cov.ok(resolving, ev({ type: "resolve", sender: "v", verdict: "match" }), at(3)), "claimed");
  expect(
    cov.ok(
      resolving,
      ev({ type: "resolve", sender: "v", verdict: "mismatch", what: "input gradient" }),
      at(3),
    ),
    "rejected",
  );
  for (const s of [challenged, uploading, resolving]) expect(cov.ok(s, tick, at(22)), "claimed");
  for (const s of [challenged, uploading, resolving]) expect(cov.ok(s, tick, at(121)), "expired");
  expect(cov.ok(cov.ok(challenged, tick, at(116)), tick, at(121)), "expired");
  const a = cov.ok(fresh(), avail, at(1));
  const au = cov.ok(a, up(owner), at(2));
  expect(cov.ok(au, seal(owner), at(2)), "claimed");
  expect(cov.ok(a, tick, at(22)), "rejected");
  expect(cov.ok(au, tick, at(22)), "rejected");
  const two = [root(0xabd), root(0xabe)];
  let m = cov.ok(
    fresh(),
    ev({
      type: "challenge",
      sender: "ref",
      kind: "fraud",
      stage: 0,
      block: null,
      phase: null,
      object_root: null,
      needed: two,
    }),
    at(1),
  );
  m = cov.ok(m, up("ref", two[0]), at(1));
  m = cov.ok(m, up("ref", two[1]), at(1));
  expect(cov.ok(m, seal("ref", two[0]), at(1)), "uploading");
}
