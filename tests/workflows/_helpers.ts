/** Shared helpers for the workflow machine tests: environments, roots and edge coverage. */
import assert from "node:assert/strict";
import type { Machine, MachineEnv, MachineEvent, MachineState, Step } from "../../workflows/machine.ts";
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
