/**
 * How a typed lifecycle machine is defined, applied, replayed and drawn.
 *
 * A machine is a value: a discriminated union of states (tagged by `status`), a discriminated union of events
 * (tagged by `type`), the edges it may take, and a pure `transition(state, event, env)` that returns the next
 * state or a rejection value. `env` carries only what consensus already knows: height, block time, params.
 * The same definition is applied by the ledger (events are transactions and height ticks) and by actors (to
 * track what they expect), so a lifecycle rule is written once.
 *
 * `apply` checks that every accepted transition follows a declared edge, so the drawn diagram is the truth.
 *
 * @example
 * ```ts
 * import { defineMachine, type Step } from "./machine.ts";
 * type S = { status: "open"; n: number } | { status: "closed"; n: number };
 * type E = { type: "add"; by: number } | { type: "close" };
 * const counter = defineMachine<S, E>({
 *   name: "counter",
 *   version: 1,
 *   states: ["open", "closed"],
 *   events: ["add", "close"],
 *   edges: [{ from: "open", event: "add", to: "open" }, { from: "open", event: "close", to: "closed" }],
 *   transition(state, event): Step<S> {
 *     if (state.status !== "open") return { ok: false, code: "invalid_transition", message: "closed" };
 *     return event.type === "add"
 *       ? { ok: true, state: { status: "open", n: state.n + event.by } }
 *       : { ok: true, state: { status: "closed", n: state.n } };
 *   },
 * });
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import type { Rejection } from "../core/errors.ts";

/** What a transition may know: consensus facts only. No clock, no randomness, no I/O. */
export interface MachineEnv<P = Readonly<Record<string, JsonValue>>> {
  /** The block height the event happens at. */
  readonly height: number;
  /** The block time in integer milliseconds since the Unix epoch. */
  readonly time: number;
  /** The genesis parameters. */
  readonly params: P;
}

/** The result of a transition: the next state, or a rejection that leaves the state unchanged. */
export type Step<S> = { readonly ok: true; readonly state: S } | Rejection;

/** A state: any JSON-serialisable object tagged by `status`. */
export type MachineState = { readonly status: string };
/** An event: any JSON-serialisable object tagged by `type`. */
export type MachineEvent = { readonly type: string };

/** One declared edge: from a state, on an event, to a state. */
export interface Edge<S extends MachineState, E extends MachineEvent> {
  readonly from: S["status"];
  readonly event: E["type"];
  readonly to: S["status"];
}

/** The definition of a machine, as written in `workflows/<name>.ts`. */
export interface MachineDefinition<S extends MachineState, E extends MachineEvent, P> {
  /** A stable name recorded in journals (`training`, `cohort`, ...). */
  readonly name: string;
  /** Bumped whenever a transition's behaviour changes; journals record it. */
  readonly version: number;
  /** Every state tag, initial first. */
  readonly states: readonly S["status"][];
  /** Every event tag. */
  readonly events: readonly E["type"][];
  /** Every transition the machine may take. */
  readonly edges: readonly Edge<S, E>[];
  /** The pure transition function. */
  transition(state: S, event: E, env: MachineEnv<P>): Step<S>;
}

/** A defined machine: the definition plus checked application, replay, hashing and drawing. */
export interface Machine<S extends MachineState, E extends MachineEvent, P>
  extends MachineDefinition<S, E, P> {
  /** Applies `event`; an accepted step that follows no declared edge throws (a bug in the machine). */
  apply(state: S, event: E, env: MachineEnv<P>): Step<S>;
  /** Applies events in order, stopping at the first rejection (reported with its index). */
  replay(
    initial: S,
    events: readonly { event: E; env: MachineEnv<P> }[],
  ): { ok: true; state: S; states: S[] } | (Rejection & { index: number; state: S });
  /** The Mermaid `stateDiagram-v2` text of the machine. */
  diagram(): string;
}

/** The hash a journal records for a state: the content id of its canonical JSON. */
export function stateHash(state: MachineState): string {
  return id(state as unknown as JsonValue);
}

/** Defines a machine, validating that its edges name only declared states and events. */
export function defineMachine<
  S extends MachineState,
  E extends MachineEvent,
  P = Readonly<Record<string, JsonValue>>,
>(
  def: MachineDefinition<S, E, P>,
): Machine<S, E, P> {
  const states = new Set<string>(def.states);
  const events = new Set<string>(def.events);
  const edges = new Set<string>();
  for (const e of def.edges) {
    if (!states.has(e.from) || !states.has(e.to) || !events.has(e.event)) {
      throw new Error(
        `Cannot define machine ${def.name}: edge ${e.from} -${e.event}-> ${e.to} names an unknown tag`,
      );
    }
    edges.add(edgeKey(e.from, e.event, e.to));
  }

  function apply(state: S, event: E, env: MachineEnv<P>): Step<S> {
    const step = def.transition(state, event, env);
    if (step.ok && !edges.has(edgeKey(state.status, event.type, step.state.status))) {
      throw new Error(
        `Machine ${def.name} took an undeclared edge ${state.status} -${event.type}-> ${step.state.status}`,
      );
    }
    return step;
  }

  return {
    ...def,
    apply,
    replay(initial, list) {
      let state = initial;
      const seen: S[] = [];
      for (let index = 0; index < list.length; index++) {
        const { event, env } = list[index]!;
        const step = apply(state, event, env);
        if (!step.ok) return { ...step, index, state };
        state = step.state;
        seen.push(state);
      }
      return { ok: true, state, states: seen };
    },
    diagram() {
      const lines = ["stateDiagram-v2", `  [*] --> ${def.states[0]}`];
      for (const e of def.edges) lines.push(`  ${e.from} --> ${e.to}: ${e.event}`);
      return lines.join("\n") + "\n";
    },
  };
}

function edgeKey(from: string, event: string, to: string): string {
  return `${from}\u0000${event}\u0000${to}`;
}
