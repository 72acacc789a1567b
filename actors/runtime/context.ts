/**
 * The contexts a durable actor's code runs with (see `durable.ts`). A query gets a `QueryContext`, which can
 * only look; an operation gets an `OperationContext`, whose every write goes through the journal: steps
 * (with their idempotency key), time, randomness and workflow events, each at a position in the operation so
 * a re-execution finds what the first execution recorded.
 *
 * @example
 * ```ts
 * import type { OperationContext } from "./context.ts";
 * async function handler(ctx: OperationContext) {
 *   const at = await ctx.now();
 *   return await ctx.step("notify", (key) => ({ key, at }));
 * }
 * ```
 */
import { canonical, decodeCanonical, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Machine, MachineEnv, MachineEvent, MachineState, Step } from "../../workflows/machine.ts";
import { crashPoint } from "./crash_point.ts";
import type { EventLog } from "./event_log.ts";
import type { Journal, OperationRecord } from "./journal.ts";
import type { AnyMachine } from "./replay.ts";

/** What a reader may do: look, never write. */
export interface QueryContext {
  /** The current state of workflow `instance` (a copy), or null. */
  state(instance: string): MachineState | null;
  /** The recorded operation `opId`, or null. */
  operation(opId: string): OperationRecord | null;
}

/** What a writer may do: everything a reader may, plus journaled steps, time, randomness and workflows. */
export interface OperationContext extends QueryContext {
  /** The id of the operation being executed. */
  readonly opId: string;
  /** Runs `fn` once and journals its JSON result; a re-execution returns the recorded result instead. */
  step<T extends JsonValue>(name: string, fn: (key: string) => T | Promise<T>): Promise<T>;
  /** The wall clock in integer milliseconds (the actor's injected clock, else `Date.now`), journaled. */
  now(): Promise<number>;
  /** `bytes` random bytes as lowercase hex, journaled. */
  random(bytes: number): Promise<string>;
  /** The instance `instance` of `machine`, created at `initial` if new. */
  workflow<S extends MachineState, E extends MachineEvent, P>(
    instance: string,
    machine: Machine<S, E, P>,
    initial: S,
  ): Workflow<S, E, P>;
}

/** A workflow instance seen from a handler. */
export interface Workflow<S extends MachineState, E extends MachineEvent, P> {
  readonly instance: string;
  /** The current state. */
  state(): S;
  /** Applies `event` and records it with its outcome and state hash before returning. */
  record(event: E, env: MachineEnv<P>): Step<S>;
}

/** The idempotency key of step `pos` (named `name`) of operation `opId`: the same on every attempt. */
export function stepKey(opId: string, pos: number, name: string): string {
  return id({ op: opId, pos, name });
}

/** A journal divergence error (the code changed behaviour against its own journal). */
export function divergence(message: string): ProtocolError {
  return new ProtocolError("journal_divergence", message);
}

/** A live workflow instance: its machine and current state. */
export interface Live {
  readonly machine: AnyMachine;
  state: MachineState;
}

/** What the contexts read and write. */
export interface ContextDeps {
  readonly journal: Journal;
  readonly log: EventLog;
  readonly live: Map<string, Live>;
  readonly machines: ReadonlyMap<string, AnyMachine>;
  /** The wall clock `ctx.now()` reads (integer milliseconds); tests inject one, the default is `Date.now`. */
  readonly clock?: () => number;
}

/** A read-only context over the actor's live workflows and journal. */
export function readContext({ journal, live }: ContextDeps): QueryContext {
  return Object.freeze({
    state: (instance: string) => {
      const l = live.get(instance);
      return l === undefined ? null : structuredClone(l.state);
    },
    operation: (opId: string) => journal.operation(opId),
  });
}

/** The context of one execution of operation `opId`; positions start at 0 on every execution. */
export function writeContext(deps: ContextDeps, opId: string): OperationContext {
  let pos = 0;
  const { journal, log, live, machines } = deps;
  const clock = deps.clock ?? Date.now;
  const step = async <T extends JsonValue>(
    name: string,
    fn: (key: string) => T | Promise<T>,
  ): Promise<T> => {
    const at = pos++;
    const found = journal.stepResult(opId, at);
    if (found !== null) {
      if (found.name !== name) {
        throw divergence(`Cannot replay operation ${opId}: step ${at} is "${found.name}", now "${name}"`);
      }
      return decodeCanonical(found.result) as T;
    }
    if (log.eventAt(opId, at) !== null) {
      throw divergence(`Cannot replay operation ${opId}: position ${at} is an event, now step "${name}"`);
    }
    const text = canonical(await fn(stepKey(opId, at, name)));
    crashPoint("effect");
    journal.recordStep(opId, at, name, text);
    return decodeCanonical(text) as T;
  };
  const workflow = <S extends MachineState, E extends MachineEvent, P>(
    instance: string,
    machine: Machine<S, E, P>,
    initial: S,
  ): Workflow<S, E, P> => {
    if (machines.get(machine.name) !== (machine as unknown)) {
      throw new Error(
        `Cannot start workflow ${instance}: machine ${machine.name} is not listed by the actor`,
      );
    }
    log.createInstance(instance, machine, initial);
    if (!live.has(instance)) {
      live.set(instance, {
        machine: machine as unknown as AnyMachine,
        state: decodeCanonical(canonical(initial)) as S,
      });
    }
    const entry = live.get(instance)!;
    if (entry.machine.name !== machine.name) {
      throw divergence(
        `Cannot open workflow ${instance}: it runs ${entry.machine.name}, not ${machine.name}`,
      );
    }
    return {
      instance,
      state: () => entry.state as S,
      record(event: E, env: MachineEnv<P>): Step<S> {
        const at = pos++;
        const found = log.eventAt(opId, at);
        if (found !== null) {
          if (
            found.instance !== instance || found.event !== canonical(event) || found.env !== canonical(env)
          ) {
            throw divergence(
              `Cannot replay operation ${opId}: event at position ${at} differs from ${found.event}`,
            );
          }
          const outcome = JSON.parse(found.outcome);
          return outcome.ok ? { ok: true, state: decodeCanonical(found.state) as unknown as S } : outcome;
        }
        if (journal.stepResult(opId, at) !== null) {
          throw divergence(`Cannot replay operation ${opId}: position ${at} is a step, now an event`);
        }
        const result = machine.apply(entry.state as S, event, env);
        const outcome = result.ok ? { ok: true } : { ok: false, code: result.code, message: result.message };
        const next = result.ok ? result.state : entry.state;
        log.append({ instance, opId, opPos: at, event, env, outcome, state: next });
        entry.state = next;
        return result;
      },
    };
  };
  return Object.freeze({
    ...readContext(deps),
    opId,
    step,
    now: () =>
      step("$now", () => {
        const t = clock();
        if (!Number.isSafeInteger(t) || t < 0) {
          throw new ProtocolError("invalid_value", `Cannot read the clock: it is ${t}, expected integer ms`);
        }
        return t;
      }),
    random: (bytes: number) =>
      step("$random", () => {
        if (!Number.isSafeInteger(bytes) || bytes < 1 || bytes > 65536) {
          throw new ProtocolError(
            "bad_request",
            `Cannot draw random bytes: count is ${bytes}, expected 1..65536`,
          );
        }
        const b = crypto.getRandomValues(new Uint8Array(bytes));
        return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
      }),
    workflow,
  });
}
