/** A small typed machine for runtime and fault tests: a counter that can be closed. */
import { defineMachine, type Step } from "../../../workflows/machine.ts";
import type { AnyMachine } from "../../../actors/runtime/replay.ts";

/** Counter states. */
export type CounterState = { status: "open"; n: number } | { status: "closed"; n: number };
/** Counter events. */
export type CounterEvent = { type: "add"; by: number } | { type: "close" };

/** The counter machine (version 1). */
export const counter = defineMachine<CounterState, CounterEvent>({
  name: "counter",
  version: 1,
  states: ["open", "closed"],
  events: ["add", "close"],
  edges: [{ from: "open", event: "add", to: "open" }, { from: "open", event: "close", to: "closed" }],
  transition(state, event): Step<CounterState> {
    if (state.status !== "open") {
      return { ok: false, code: "invalid_transition", message: `Cannot ${event.type}: counter is closed` };
    }
    if (event.type === "close") return { ok: true, state: { status: "closed", n: state.n } };
    if (!Number.isSafeInteger(event.by) || event.by < 1) {
      return { ok: false, code: "invalid_amount", message: `Cannot add: by is ${event.by}, expected >= 1` };
    }
    return { ok: true, state: { status: "open", n: state.n + event.by } };
  },
});

/** The machines a replay of a test journal needs (the `--machines` module of `deno task replay`). */
export const machines: AnyMachine[] = [counter as unknown as AnyMachine];
