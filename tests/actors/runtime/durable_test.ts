import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { canonical, type JsonValue } from "../../../core/canonical.ts";
import { ProtocolError, RetryableError } from "../../../core/errors.ts";
import { stateHash } from "../../../workflows/machine.ts";
import { defineActor, DurableActor, type QueryContext, stepKey } from "../../../actors/runtime/durable.ts";
import { EventLog } from "../../../actors/runtime/event_log.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { counter, type CounterState, machines } from "./_counter.ts";
import { tempDir } from "./_temp.ts";

const dec = new TextDecoder();

/** The last context a query received (set by the `capture` query). */
let captured: QueryContext | null = null;
const ENV = { height: 5, time: 1_700_000_000_000, params: {} };

function tempPath(): string {
  return `${tempDir("durable_test_")}/journal.sqlite`;
}

/** An actor whose effects are counted, and which can be told to fail after its effect (a simulated crash). */
function makeActor(effects: string[], failAfterEffect: { on: boolean }) {
  return defineActor({
    name: "test",
    machines,
    handlers: {
      async work(ctx, input) {
        const by = (input as { by: number }).by;
        const wf = ctx.workflow("c1", counter, { status: "open", n: 0 });
        const step = wf.record({ type: "add", by }, ENV);
        if (!step.ok) throw new ProtocolError(step.code, step.message);
        const at = await ctx.now();
        const nonce = await ctx.random(8);
        const sent = await ctx.step("send", (key) => {
          effects.push(key);
          return { key, n: step.state.n };
        });
        if (failAfterEffect.on) throw new Error("simulated crash after the effect was journaled");
        return { at, nonce, sent, n: step.state.n };
      },
      reject() {
        return Promise.reject(new ProtocolError("invalid_amount", "Cannot pay: amount is 0"));
      },
      flaky(ctx) {
        return ctx.step("try", () => {
          throw new RetryableError("store busy");
        });
      },
    },
    queries: {
      count: (ctx) => ctx.state("c1") as unknown as JsonValue,
      caps: (ctx) => Object.keys(ctx).sort(),
      capture: (ctx) => {
        captured = ctx;
        return null;
      },
    },
  });
}

Deno.test("a finished operation re-delivered returns identical bytes without running the handler again", async () => {
  const effects: string[] = [];
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor(effects, { on: false }));
  const first = await actor.deliver("work", "op1", { by: 2 });
  const again = await actor.deliver("work", "op1", { by: 2 });
  assert.deepEqual(again, first);
  assert.equal(effects.length, 1);
  const value = JSON.parse(dec.decode(first));
  assert.equal(value.ok, true);
  assert.deepEqual(value.value.sent, { key: stepKey("op1", 3, "send"), n: 2 });
  assert.match(value.value.nonce, /^[0-9a-f]{16}$/);
  actor.journal.close();
});

Deno.test("an unfinished operation is re-executed on restart without repeating recorded steps", async () => {
  const path = tempPath();
  const effects: string[] = [];
  const crash = { on: true };
  const actor = await DurableActor.open(Journal.open(path), makeActor(effects, crash));
  await assert.rejects(actor.deliver("work", "op1", { by: 3 }), /simulated crash/);
  const steps = actor.journal.steps("op1");
  assert.deepEqual(steps.map((s) => s.name), ["$now", "$random", "send"]);
  actor.journal.close();
  crash.on = false;
  const restarted = await DurableActor.open(Journal.open(path), makeActor(effects, crash));
  assert.equal(effects.length, 1);
  const op = restarted.journal.operation("op1")!;
  assert.equal(op.status, "done");
  const value = JSON.parse(dec.decode(op.result!)).value;
  assert.equal(value.at, JSON.parse(steps[0]!.result));
  assert.equal(value.nonce, JSON.parse(steps[1]!.result));
  assert.equal(value.n, 3);
  assert.deepEqual(restarted.query("count", null), { status: "open", n: 3 });
  assert.equal(new EventLog(restarted.journal).events("c1").length, 1);
  restarted.journal.close();
});

Deno.test("restart rebuilds workflow state by replaying its events and checks the recorded hashes", async () => {
  const path = tempPath();
  const effects: string[] = [];
  const actor = await DurableActor.open(Journal.open(path), makeActor(effects, { on: false }));
  await actor.deliver("work", "a", { by: 1 });
  await actor.deliver("work", "b", { by: 4 });
  const events = new EventLog(actor.journal).events("c1");
  assert.deepEqual(events.map((e) => e.stateHash), [
    stateHash({ status: "open", n: 1 } as CounterState),
    stateHash({ status: "open", n: 5 } as CounterState),
  ]);
  assert.deepEqual(events.map((e) => [e.machine, e.machineVersion, e.format]), [["counter", 1, 1], [
    "counter",
    1,
    1,
  ]]);
  actor.journal.close();
  const restarted = await DurableActor.open(Journal.open(path), makeActor(effects, { on: false }));
  assert.deepEqual(restarted.query("count", null), { status: "open", n: 5 } satisfies CounterState);
  restarted.journal.close();
});

Deno.test("a journal whose event was changed stops the actor on open with journal_divergence at that event", async () => {
  const path = tempPath();
  const actor = await DurableActor.open(Journal.open(path), makeActor([], { on: false }));
  await actor.deliver("work", "a", { by: 1 });
  await actor.deliver("work", "b", { by: 4 });
  actor.journal.close();
  const db = new DatabaseSync(path);
  db.exec(`UPDATE events SET event = '{"by":5,"type":"add"}' WHERE seq = 1`);
  db.close();
  await assert.rejects(
    DurableActor.open(Journal.open(path), makeActor([], { on: false })),
    (e: unknown) =>
      e instanceof ProtocolError && e.code === "journal_divergence" &&
      /at event #1: the state after/.test(e.message),
  );
});

Deno.test("the same operation id with another input is conflicting_operation and nothing runs", async () => {
  const effects: string[] = [];
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor(effects, { on: false }));
  const first = await actor.deliver("work", "op1", { by: 2 });
  await assert.rejects(
    actor.deliver("work", "op1", { by: 9 }),
    (e: unknown) => e instanceof ProtocolError && e.code === "conflicting_operation",
  );
  assert.equal(effects.length, 1);
  assert.deepEqual(actor.journal.operation("op1")!.result, first);
  assert.deepEqual(actor.query("count", null), { status: "open", n: 2 });
  actor.journal.close();
});

Deno.test("an unknown handler is not_found and journals nothing", async () => {
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor([], { on: false }));
  await assert.rejects(
    actor.deliver("nope", "op1", 1),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  assert.deepEqual(actor.journal.operations(), []);
  actor.journal.close();
});

Deno.test("a handler's ProtocolError is recorded as the result and replayed to re-deliveries", async () => {
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor([], { on: false }));
  const bytes = await actor.deliver("reject", "op1", null);
  assert.equal(dec.decode(bytes), '{"code":"invalid_amount","message":"Cannot pay: amount is 0","ok":false}');
  assert.deepEqual(await actor.deliver("reject", "op1", null), bytes);
  actor.journal.close();
});

Deno.test("a machine rejection inside a handler is recorded as an event with its outcome", async () => {
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor([], { on: false }));
  const bytes = await actor.deliver("work", "op1", { by: 0 });
  assert.equal(
    dec.decode(bytes),
    '{"code":"invalid_amount","message":"Cannot add: by is 0, expected >= 1","ok":false}',
  );
  const [event] = new EventLog(actor.journal).events("c1");
  assert.equal(
    event!.outcome,
    '{"code":"invalid_amount","message":"Cannot add: by is 0, expected >= 1","ok":false}',
  );
  assert.equal(event!.state, canonical({ status: "open", n: 0 }));
  actor.journal.close();
});

Deno.test("a RetryableError leaves the operation begun with no step recorded", async () => {
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor([], { on: false }));
  await assert.rejects(actor.deliver("flaky", "op1", null), RetryableError);
  assert.deepEqual(actor.journal.unfinished().map((o) => o.opId), ["op1"]);
  assert.deepEqual(actor.journal.steps("op1"), []);
  actor.journal.close();
});

Deno.test("a query context has read methods only", async () => {
  const actor = await DurableActor.open(Journal.open(tempPath()), makeActor([], { on: false }));
  assert.deepEqual(actor.query("caps", null), ["operation", "state"]);
  // The types say the same: a reader cannot reach a writer's methods (checked when this file compiles).
  const writes = (ctx: QueryContext) => [
    // @ts-expect-error a query context has no step
    ctx.step,
    // @ts-expect-error a query context has no workflow
    ctx.workflow,
    // @ts-expect-error a query context has no clock
    ctx.now,
  ];
  actor.query("capture", null);
  assert.deepEqual(writes(captured!), [undefined, undefined, undefined]);
  actor.journal.close();
});

Deno.test("a re-execution that calls different steps is journal_divergence and is not recorded as a result", async () => {
  const path = tempPath();
  let name = "first";
  const def = defineActor({
    name: "fickle",
    machines: [],
    handlers: {
      async go(ctx) {
        await ctx.step(name, () => 1);
        throw new Error("crash");
      },
    },
  });
  const actor = await DurableActor.open(Journal.open(path), def);
  await assert.rejects(actor.deliver("go", "op1", null), /crash/);
  actor.journal.close();
  name = "second";
  await assert.rejects(
    DurableActor.open(Journal.open(path), def),
    (e: unknown) => e instanceof ProtocolError && e.code === "journal_divergence",
  );
  const j = Journal.open(path);
  assert.equal(j.operation("op1")!.status, "begun");
  j.close();
});

Deno.test("an operation that is still retryable at restart stays begun and the actor opens", async () => {
  const path = tempPath();
  const down = { on: true };
  const def = defineActor({
    name: "retry",
    machines: [],
    handlers: {
      send: (ctx) =>
        ctx.step("send", () => {
          if (down.on) throw new RetryableError("validator unreachable");
          return "sent";
        }),
    },
  });
  const actor = await DurableActor.open(Journal.open(path), def);
  await assert.rejects(actor.deliver("send", "op1", null), RetryableError);
  actor.journal.close();
  const restarted = await DurableActor.open(Journal.open(path), def);
  assert.deepEqual(restarted.recovered.map((r) => [r.opId, r.ok]), [["op1", false]]);
  assert.equal(restarted.journal.operation("op1")!.status, "begun");
  down.on = false;
  const again = await restarted.recover();
  assert.deepEqual(again.map((r) => [r.opId, r.ok && new TextDecoder().decode(r.result)]), [
    ["op1", '{"ok":true,"value":"sent"}'],
  ]);
  restarted.journal.close();
});

Deno.test("ctx.now reads the clock injected at open, journals it, and a restart replays the recorded time", async () => {
  const path = tempPath();
  let t = 1_767_225_600_000;
  const def = defineActor({
    name: "clocked",
    machines: [],
    handlers: { at: async (ctx) => await ctx.now() },
  });
  const actor = await DurableActor.open(Journal.open(path), def, { clock: () => t });
  assert.equal(dec.decode(await actor.deliver("at", "op1", null)), '{"ok":true,"value":1767225600000}');
  actor.journal.close();
  t += 86_400_000;
  const again = await DurableActor.open(Journal.open(path), def, { clock: () => t });
  assert.equal(dec.decode(await again.deliver("at", "op1", null)), '{"ok":true,"value":1767225600000}');
  assert.equal(dec.decode(await again.deliver("at", "op2", null)), '{"ok":true,"value":1767312000000}');
  again.journal.close();
});

Deno.test("a clock that answers a non-integer is invalid_value and records no time", async () => {
  const path = tempPath();
  const def = defineActor({
    name: "clocked",
    machines: [],
    handlers: { at: async (ctx) => await ctx.now() },
  });
  const actor = await DurableActor.open(Journal.open(path), def, { clock: () => 1.5 });
  const r = JSON.parse(dec.decode(await actor.deliver("at", "op1", null)));
  assert.equal(r.code, "invalid_value");
  assert.deepEqual(actor.journal.steps("op1"), []);
  actor.journal.close();
});
