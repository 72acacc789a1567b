/**
 * The durable executor: an actor is a value with named handlers (writers) and queries (readers). A delivered
 * operation is journaled (`begin`) before its handler runs and its result (`complete`) before the reply; the
 * handler reaches the world only through its context:
 * - `ctx.step(name, fn)` runs a side effect once and journals its result; on re-execution the recorded
 *   result is returned and `fn` is not called again. `fn` receives an idempotency key (the same on every
 *   attempt) so the receiver can absorb the one duplicate a crash between effect and journal can cause;
 * - `ctx.now()` and `ctx.random(n)` are steps too, so time and randomness replay identically;
 * - `ctx.workflow(instance, machine, initial).record(event, env)` applies a typed machine and records the
 *   event, the outcome and the state hash before the handler acts on it.
 *
 * On `open`, every workflow instance is rebuilt by replaying its events through its pure machine (a
 * divergence stops the actor), then every operation begun but not finished is re-executed.
 *
 * A handler's `ProtocolError` is a final answer: it is recorded as `{ok:false, code, message}` and replayed
 * to re-deliveries. A `RetryableError` (or any other error) leaves the operation begun, to be retried.
 *
 * @example
 * ```ts
 * import { defineActor, DurableActor } from "./durable.ts";
 * import { Journal } from "./journal.ts";
 * const echo = defineActor({
 *   name: "echo",
 *   machines: [],
 *   handlers: { say: async (ctx, input) => ({ input, at: await ctx.now() }) },
 * });
 * const actor = await DurableActor.open(Journal.open("/tmp/home/journal.sqlite"), echo);
 * const bytes = await actor.deliver("say", "op-1", "hi"); // {"ok":true,"value":{"at":...,"input":"hi"}}
 * ```
 */
import { canonical, canonicalBytes, decodeCanonical, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Machine, MachineEnv, MachineEvent, MachineState, Step } from "../../workflows/machine.ts";
import { crashPoint } from "./crash_point.ts";
import { EventLog } from "./event_log.ts";
import type { Journal, OperationRecord } from "./journal.ts";
import { type AnyMachine, formatDivergence, replayInstance } from "./replay.ts";

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
  /** The wall clock in integer milliseconds, journaled. */
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

/** A writer: receives the operation context and the input, returns the JSON result. */
export type Handler = (ctx: OperationContext, input: JsonValue) => Promise<JsonValue>;
/** A reader: receives a read-only context. */
export type Query = (ctx: QueryContext, input: JsonValue) => JsonValue;

/** An actor as a value. */
export interface ActorDefinition {
  readonly name: string;
  /** Every machine its workflows use (needed to rebuild them on restart). */
  readonly machines: readonly AnyMachine[];
  readonly handlers: Readonly<Record<string, Handler>>;
  readonly queries?: Readonly<Record<string, Query>>;
}

/** Defines an actor (identity; gives the definition its type). */
export function defineActor<D extends ActorDefinition>(def: D): D {
  return def;
}

/** The idempotency key of step `pos` (named `name`) of operation `opId`: the same on every attempt. */
export function stepKey(opId: string, pos: number, name: string): string {
  return id({ op: opId, pos, name });
}

function divergence(message: string): ProtocolError {
  return new ProtocolError("journal_divergence", message);
}

interface Live {
  readonly machine: AnyMachine;
  state: MachineState;
}

/** A running durable actor over one journal. Operations run one at a time, in delivery order. */
export class DurableActor {
  private readonly log: EventLog;
  private readonly live = new Map<string, Live>();
  private readonly machines = new Map<string, AnyMachine>();
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly journal: Journal, readonly def: ActorDefinition) {
    this.log = new EventLog(journal);
    for (const m of def.machines) this.machines.set(m.name, m);
  }

  /**
   * Opens the actor: rebuilds every workflow instance by replaying its journal (throws
   * `ProtocolError(journal_divergence)` with the report on a mismatch), then re-executes unfinished
   * operations unless `recover` is false.
   */
  static async open(journal: Journal, def: ActorDefinition, options: { recover?: boolean } = {}) {
    const actor = new DurableActor(journal, def);
    for (const inst of actor.log.instances()) {
      const machine = actor.machines.get(inst.machine);
      const r = replayInstance(machine, inst, actor.log.replayEvents(inst.instance));
      if (!r.ok) throw divergence(`Cannot open actor ${def.name}: ${formatDivergence(r.divergence)}`);
      actor.live.set(inst.instance, { machine: machine!, state: r.value.state });
    }
    if (options.recover !== false) await actor.recover();
    return actor;
  }

  /** Re-executes every operation begun and not finished; returns their recorded results in order. */
  recover(): Promise<Uint8Array[]> {
    return this.serial(async () => {
      const out: Uint8Array[] = [];
      for (const op of this.journal.unfinished()) {
        const input = op.input === null ? null : decodeCanonical(op.input);
        out.push(await this.execute(op.opId, op.handler, input));
      }
      return out;
    });
  }

  /**
   * Delivers operation `opId` to handler `handler`: returns the recorded result bytes when it finished before,
   * executes it otherwise. Throws `ProtocolError(conflicting_operation)` when `opId` was used for another
   * input, `ProtocolError(not_found)` for an unknown handler (nothing is journaled then).
   */
  deliver(handler: string, opId: string, input: JsonValue): Promise<Uint8Array> {
    return this.serial(() => {
      if (!Object.hasOwn(this.def.handlers, handler)) {
        throw new ProtocolError(
          "not_found",
          `Cannot deliver operation: actor ${this.def.name} has no handler "${handler}"`,
        );
      }
      const begun = this.journal.begin(opId, id({ handler, input }), {
        handler,
        input: canonicalBytes(input),
      });
      if (begun.status === "done") return Promise.resolve(begun.result);
      return this.execute(opId, handler, input);
    });
  }

  /** Runs query `name` with a read-only context. */
  query(name: string, input: JsonValue): JsonValue {
    const q = this.def.queries?.[name];
    if (q === undefined) {
      throw new ProtocolError("not_found", `Cannot run query: actor ${this.def.name} has no query "${name}"`);
    }
    return q(this.readContext(), input);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  private readContext(): QueryContext {
    return Object.freeze({
      state: (instance: string) => {
        const l = this.live.get(instance);
        return l === undefined ? null : structuredClone(l.state);
      },
      operation: (opId: string) => this.journal.operation(opId),
    });
  }

  private async execute(opId: string, handler: string, input: JsonValue): Promise<Uint8Array> {
    const fn = this.def.handlers[handler];
    if (fn === undefined) {
      throw new ProtocolError("not_found", `Cannot execute operation ${opId}: no handler "${handler}"`);
    }
    let result: JsonValue;
    try {
      result = { ok: true, value: await fn(this.writeContext(opId), input) };
    } catch (e) {
      if (!(e instanceof ProtocolError) || e.code === "journal_divergence") throw e;
      result = { ok: false, code: e.code, message: e.message };
    }
    return this.journal.complete(opId, canonicalBytes(result));
  }

  private writeContext(opId: string): OperationContext {
    let pos = 0;
    const { journal, log, live, machines } = this;
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
          const outcome = result.ok
            ? { ok: true }
            : { ok: false, code: result.code, message: result.message };
          const next = result.ok ? result.state : entry.state;
          log.append({ instance, opId, opPos: at, event, env, outcome, state: next });
          entry.state = next;
          return result;
        },
      };
    };
    return Object.freeze({
      ...this.readContext(),
      opId,
      step,
      now: () => step("$now", () => Date.now()),
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
}
