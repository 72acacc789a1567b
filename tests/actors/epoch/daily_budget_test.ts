import assert from "node:assert/strict";
import { ProtocolError } from "../../../core/errors.ts";
import { defineActor, DurableActor } from "../../../actors/runtime/durable.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import {
  chargeEpoch,
  chargeHandler,
  charges,
  nextDayStart,
  utcDay,
} from "../../../actors/epoch/daily_budget.ts";
import { tempDir } from "../runtime/_temp.ts";

const DAY = 86_400_000;
/** 2026-01-01T00:00:00Z. */
const JAN1 = 1_767_225_600_000;
const BUDGET = defineActor({ name: "epoch", machines: [], handlers: { charge: chargeHandler } });

/** A budget actor over the journal at `path`, reading the time from `clock.t`. */
async function open(path: string, clock: { t: number }) {
  return await DurableActor.open(Journal.open(path), BUDGET, { clock: () => clock.t });
}

function spent(e: unknown, message: string): boolean {
  return e instanceof ProtocolError && e.code === "day_budget_spent" && e.message === message;
}

Deno.test("utcDay is the UTC calendar day and nextDayStart its following midnight", () => {
  assert.equal(utcDay(JAN1), "2026-01-01");
  assert.equal(utcDay(JAN1 - 1), "2025-12-31");
  assert.equal(utcDay(JAN1 + DAY - 1), "2026-01-01");
  assert.equal(nextDayStart("2026-01-01"), JAN1 + DAY);
  assert.equal(nextDayStart("2028-02-28"), Date.UTC(2028, 1, 29));
});

Deno.test("a second epoch is refused on the same UTC day, the refusal leaves the charges unchanged, and the next day allows it", async () => {
  const path = `${tempDir("daily_budget_")}/journal.sqlite`;
  const clock = { t: JAN1 + 10 * 3_600_000 };
  const limits = { epochs: 1, atoms: 1_000 };
  const actor = await open(path, clock);
  const first = await chargeEpoch(actor, () => clock.t, { epoch: 1, atoms: 400, limits });
  assert.deepEqual(first, { epoch: 1, day: "2026-01-01", at: JAN1 + 36_000_000, atoms: 400 });
  clock.t = JAN1 + DAY - 1; // the last millisecond of the same day
  await assert.rejects(
    chargeEpoch(actor, () => clock.t, { epoch: 2, atoms: 400, limits }),
    (e) =>
      spent(
        e,
        "Cannot charge epoch 2: 1 of 1 epochs are charged on 2026-01-01; the next UTC day starts at 2026-01-02T00:00:00.000Z",
      ),
  );
  assert.deepEqual(charges(actor.journal), [first]);
  // Charging epoch 1 again returns its charge: it is never charged twice.
  assert.deepEqual(await chargeEpoch(actor, () => clock.t, { epoch: 1, atoms: 400, limits }), first);
  assert.equal(charges(actor.journal).length, 1);
  clock.t = JAN1 + DAY;
  const second = await chargeEpoch(actor, () => clock.t, { epoch: 2, atoms: 400, limits });
  assert.deepEqual(second, { epoch: 2, day: "2026-01-02", at: JAN1 + DAY, atoms: 400 });
  assert.deepEqual(charges(actor.journal), [first, second]);
  actor.journal.close();
});

Deno.test("a restart never replenishes the day's budget, whatever the limits say now", async () => {
  const path = `${tempDir("daily_budget_")}/journal.sqlite`;
  const clock = { t: JAN1 + 1 };
  const a = await open(path, clock);
  await chargeEpoch(a, () => clock.t, { epoch: 1, atoms: 600, limits: { epochs: 2, atoms: 1_000 } });
  a.journal.close();
  const b = await open(path, clock);
  await assert.rejects(
    chargeEpoch(b, () => clock.t, { epoch: 2, atoms: 600, limits: { epochs: 2, atoms: 1_000 } }),
    (e) =>
      spent(
        e,
        "Cannot charge epoch 2: 600 of 1000 atoms are charged on 2026-01-01, and an epoch needs 600; the next UTC day starts at 2026-01-02T00:00:00.000Z",
      ),
  );
  b.journal.close();
  // The refusal is recorded for that day: reopened, the same day still refuses with the same answer.
  const c = await open(path, clock);
  await assert.rejects(
    chargeEpoch(c, () => clock.t, { epoch: 2, atoms: 100, limits: { epochs: 9, atoms: 9_000 } }),
    (e) => e instanceof ProtocolError && e.code === "day_budget_spent",
  );
  assert.equal(charges(c.journal).length, 1);
  clock.t = JAN1 + DAY + 5;
  assert.equal(
    (await chargeEpoch(c, () => clock.t, { epoch: 2, atoms: 600, limits: { epochs: 2, atoms: 1_000 } })).day,
    "2026-01-02",
  );
  c.journal.close();
});

Deno.test("a charge re-executed after a crash sees the time it journaled, and a day that changed is refused", async () => {
  const path = `${tempDir("daily_budget_")}/journal.sqlite`;
  const clock = { t: JAN1 + DAY - 5 };
  const actor = await open(path, clock);
  // The operation is named for the day of the caller's clock; the handler's journaled time is a day later.
  const input = { epoch: 1, day: "2025-12-31", atoms: 1, limits: { epochs: 1, atoms: 1 }, charged: [] };
  const r = JSON.parse(new TextDecoder().decode(await actor.deliver("charge", "charge/1/2025-12-31", input)));
  assert.deepEqual(r, {
    ok: false,
    code: "day_budget_spent",
    message: "Cannot charge epoch 1: the UTC day is 2026-01-01, expected 2025-12-31",
  });
  assert.deepEqual(charges(actor.journal), []);
  actor.journal.close();
});
