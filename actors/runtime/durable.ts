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
 * to re-deliveries (except `journal_divergence`, a bug in the actor's code, which is never recorded). A
 * `RetryableError` (or any other error) leaves the operation begun, to be retried. A result is recorded as
 * `{ok:true, value}`. The input hash journaled by `begin` is `id({handler, input})`.
 *
 * Operations of one actor run one at a time, in delivery order, so workflow state never interleaves; a long
 * step (waiting for a confirmation) delays the operations queued behind it.
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
import { canonicalBytes, decodeCanonical, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import {
  type ContextDeps,
  divergence,
  type Live,
  type OperationContext,
  type QueryContext,
  readContext,
  writeContext,
} from "./context.ts";
import { EventLog } from "./event_log.ts";
import type { Journal } from "./journal.ts";
import { type AnyMachine, formatDivergence, replayInstance } from "./replay.ts";

export type { OperationContext, QueryContext, Workflow } from "./context.ts";
export { stepKey } from "./context.ts";

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

/** What recovery did with one unfinished operation. */
export type Recovery =
  | { readonly opId: string; readonly ok: true; readonly result: Uint8Array }
  | { readonly opId: string; readonly ok: false; readonly error: RetryableError };

/** A running durable actor over one journal. Operations run one at a time, in delivery order. */
export class DurableActor {
  private readonly log: EventLog;
  private readonly live = new Map<string, Live>();
  private readonly machines = new Map<string, AnyMachine>();
  private readonly deps: ContextDeps;
  /** What the recovery in `open` did with each unfinished operation. */
  recovered: Recovery[] = [];
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(readonly journal: Journal, readonly def: ActorDefinition, clock?: () => number) {
    this.log = new EventLog(journal);
    for (const m of def.machines) this.machines.set(m.name, m);
    this.deps = {
      journal,
      log: this.log,
      live: this.live,
      machines: this.machines,
      ...(clock === undefined ? {} : { clock }),
    };
  }

  /**
   * Opens the actor: rebuilds every workflow instance by replaying its journal (throws
   * `ProtocolError(journal_divergence)` with the report on a mismatch), then re-executes unfinished
   * operations unless `recover` is false (see `recover`; the report is kept in `recovered`). `clock` is the
   * wall clock its operations' `ctx.now()` reads (default `Date.now`; tests inject one).
   */
  static async open(
    journal: Journal,
    def: ActorDefinition,
    options: { recover?: boolean; clock?: () => number } = {},
  ): Promise<DurableActor> {
    const actor = new DurableActor(journal, def, options.clock);
    for (const inst of actor.log.instances()) {
      const machine = actor.machines.get(inst.machine);
      const r = replayInstance(machine, inst, actor.log.replayEvents(inst.instance));
      if (!r.ok) throw divergence(`Cannot open actor ${def.name}: ${formatDivergence(r.divergence)}`);
      actor.live.set(inst.instance, { machine: machine!, state: r.value.state });
    }
    if (options.recover !== false) actor.recovered = await actor.recover();
    return actor;
  }

  /**
   * Re-executes every operation begun and not finished, in the order they began. An operation that fails
   * with a `RetryableError` stays begun (reported, retried by the next `recover` or re-delivery); any other
   * error stops the recovery.
   */
  recover(): Promise<Recovery[]> {
    return this.serial(async () => {
      const out: Recovery[] = [];
      for (const op of this.journal.unfinished()) {
        const input = op.input === null ? null : decodeCanonical(op.input);
        try {
          out.push({ opId: op.opId, ok: true, result: await this.execute(op.opId, op.handler, input) });
        } catch (e) {
          if (!(e instanceof RetryableError)) throw e;
          out.push({ opId: op.opId, ok: false, error: e });
        }
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
    return q(readContext(this.deps), input);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  private async execute(opId: string, handler: string, input: JsonValue): Promise<Uint8Array> {
    const fn = this.def.handlers[handler];
    if (fn === undefined) {
      throw new ProtocolError("not_found", `Cannot execute operation ${opId}: no handler "${handler}"`);
    }
    let result: JsonValue;
    try {
      result = { ok: true, value: await fn(writeContext(this.deps, opId), input) };
    } catch (e) {
      if (!(e instanceof ProtocolError) || e.code === "journal_divergence") throw e;
      result = { ok: false, code: e.code, message: e.message };
    }
    return this.journal.complete(opId, canonicalBytes(result));
  }
}
