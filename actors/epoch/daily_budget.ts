/**
 * The epoch controller's daily budget: at most `daily.epochs` epochs and `daily.atoms` atoms charged per UTC
 * day. An epoch is charged `epoch_atoms` by a durable `charge` operation before it starts; the charges are the
 * operations' recorded results in the controller's journal, so what was charged survives any crash and a
 * restart (whatever the config says now) never gives any of it back.
 *
 * The day is the UTC calendar day (`temporal-polyfill`) of the time the operation reads through its context
 * (`ctx.now()`: the clock injected into the actor, journaled), so a test moves days by injecting a clock and a
 * re-executed charge sees the time it saw first. The operation id names the epoch and the day
 * (`charge/<epoch>/<day>`): a refusal is recorded for that day only, and the same epoch may be charged on a
 * later day; an epoch already charged is never charged again.
 *
 * @example
 * ```ts
 * import { utcDay } from "./daily_budget.ts";
 * utcDay(1_767_225_600_000); // "2026-01-01"
 * ```
 */
import { Temporal } from "temporal-polyfill";
import { decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { DurableActor, OperationContext } from "../runtime/durable.ts";
import type { Journal } from "../runtime/journal.ts";

/** The limits of one UTC day. */
export interface DailyLimits {
  readonly epochs: number;
  readonly atoms: number;
}

/** One recorded charge. */
export interface Charge extends JsonObject {
  epoch: number;
  day: string;
  /** When it was charged (ms, the context's clock). */
  at: number;
  atoms: number;
}

/** What a `charge` operation is asked. */
export interface ChargeInput extends JsonObject {
  epoch: number;
  day: string;
  atoms: number;
  limits: { epochs: number; atoms: number };
  /** Every charge recorded before this one (journaled with the input, so a re-execution sees the same). */
  charged: Charge[];
}

/** The UTC calendar day (`YYYY-MM-DD`) of `ms` milliseconds since the Unix epoch. */
export function utcDay(ms: number): string {
  return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO("UTC").toPlainDate().toString();
}

/** The first millisecond of the UTC day after `day`. */
export function nextDayStart(day: string): number {
  return Temporal.PlainDate.from(day).add({ days: 1 }).toZonedDateTime("UTC").epochMilliseconds;
}

/** The operation id of charging `epoch` on `day`. */
export function chargeOpId(epoch: number, day: string): string {
  return `charge/${epoch}/${day}`;
}

/** Every charge the journal recorded (refusals excluded), oldest first. */
export function charges(journal: Journal): Charge[] {
  const out: Charge[] = [];
  for (const op of journal.operations()) {
    if (op.handler !== "charge" || op.result === null) continue;
    const r = decodeCanonical(op.result) as { ok: boolean; value?: Charge };
    if (r.ok) out.push(r.value!);
  }
  return out;
}

/** Why `input` may not be charged on top of `charged` (null when it may). */
export function refusal(
  charged: readonly Charge[],
  input: Pick<ChargeInput, "day" | "atoms" | "limits">,
): string | null {
  const today = charged.filter((c) => c.day === input.day);
  const atoms = today.reduce((n, c) => n + c.atoms, 0);
  if (today.length >= input.limits.epochs) {
    return `${today.length} of ${input.limits.epochs} epochs are charged on ${input.day}`;
  }
  if (atoms + input.atoms > input.limits.atoms) {
    return `${atoms} of ${input.limits.atoms} atoms are charged on ${input.day}, and an epoch needs ${input.atoms}`;
  }
  return null;
}

/**
 * The `charge` handler: reads the time, refuses (`day_budget_spent`) when the day is not the one the
 * operation is named for or its budget would be exceeded, and records the charge otherwise.
 */
export async function chargeHandler(ctx: OperationContext, value: JsonValue): Promise<JsonValue> {
  const input = value as ChargeInput;
  const at = await ctx.now();
  const day = utcDay(at);
  if (day !== input.day) {
    throw new ProtocolError(
      "day_budget_spent",
      `Cannot charge epoch ${input.epoch}: the UTC day is ${day}, expected ${input.day}`,
    );
  }
  const why = refusal(input.charged, input);
  if (why !== null) {
    throw new ProtocolError(
      "day_budget_spent",
      `Cannot charge epoch ${input.epoch}: ${why}; the next UTC day starts at ${
        new Date(nextDayStart(day)).toISOString()
      }`,
    );
  }
  return { epoch: input.epoch, day, at, atoms: input.atoms } satisfies Charge;
}

/**
 * Charges `epoch` on the day of `clock()` through `actor` (whose definition has `chargeHandler` as
 * `charge`): returns the charge, the one already recorded for this epoch, or throws `day_budget_spent`.
 */
export async function chargeEpoch(
  actor: DurableActor,
  clock: () => number,
  request: { epoch: number; atoms: number; limits: DailyLimits },
): Promise<Charge> {
  const charged = charges(actor.journal);
  const found = charged.find((c) => c.epoch === request.epoch);
  if (found !== undefined) return found;
  const day = utcDay(clock());
  const opId = chargeOpId(request.epoch, day);
  const recorded = actor.journal.operation(opId);
  const input = recorded?.input ? decodeCanonical(recorded.input) : {
    epoch: request.epoch,
    day,
    atoms: request.atoms,
    limits: { epochs: request.limits.epochs, atoms: request.limits.atoms },
    charged,
  };
  const r = decodeCanonical(await actor.deliver("charge", opId, input)) as {
    ok: boolean;
    value?: Charge;
    code?: string;
    message?: string;
  };
  if (!r.ok) throw new ProtocolError(r.code as never, r.message ?? "");
  return r.value!;
}
