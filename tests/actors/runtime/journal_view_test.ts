import assert from "node:assert/strict";
import { canonical } from "../../../core/canonical.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { defineActor, DurableActor } from "../../../actors/runtime/durable.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { describeJournal, formatJournal } from "../../../actors/runtime/journal_view.ts";
import { counter, machines } from "./_counter.ts";
import { tempDir } from "./_temp.ts";

const ENV = { height: 3, time: 9, params: {} };

async function journalWithTwoOperations(): Promise<string> {
  const path = `${tempDir("journal_view_test_")}/journal.sqlite`;
  const actor = await DurableActor.open(
    Journal.open(path),
    defineActor({
      name: "view",
      machines,
      handlers: {
        async add(ctx, input) {
          const step = ctx.workflow("c", counter, { status: "open", n: 0 }).record(
            { type: "add", by: input as number },
            ENV,
          );
          await ctx.step("echo", () => ({ by: input }));
          return step.ok ? step.state.n : step.code;
        },
      },
    }),
  );
  await actor.deliver("add", "op-a", 2);
  await actor.deliver("add", "op-b", 0);
  actor.journal.close();
  return path;
}

Deno.test("the journal document lists operations, instance events with outcomes, and submissions", async () => {
  const journal = Journal.open(await journalWithTwoOperations(), { readOnly: true });
  const doc = describeJournal(journal);
  journal.close();
  assert.deepEqual(
    (doc.operations as { op_id: string; status: string; result: unknown }[]).map((
      o,
    ) => [o.op_id, o.status, o.result]),
    [
      ["op-a", "done", { ok: true, value: 2 }],
      ["op-b", "done", { ok: true, value: "invalid_amount" }],
    ],
  );
  const [inst] = doc.instances as {
    instance: string;
    events: { seq: number; outcome: unknown; state: unknown }[];
  }[];
  assert.equal(inst!.instance, "c");
  assert.deepEqual(inst!.events.map((e) => [e.seq, e.outcome, e.state]), [
    [0, { ok: true }, { n: 2, status: "open" }],
    [1, { code: "invalid_amount", message: "Cannot add: by is 0, expected >= 1", ok: false }, {
      n: 2,
      status: "open",
    }],
  ]);
  assert.deepEqual(doc.submissions, []);
  const text = formatJournal(doc);
  assert.match(text, /^operations \(2\):\n {2}#1 op-a add done \{"ok":true,"value":2\}\n/);
  assert.match(
    text,
    /\n {4}#1 \{"by":0,"type":"add"\} rejected invalid_amount -> \{"n":2,"status":"open"\} [0-9a-f]{64}\n/,
  );
  assert.ok(text.endsWith("submissions (0):"));
  assert.doesNotThrow(() => canonical(doc));
});

Deno.test("one operation is shown with its input, result, steps and the events it recorded", async () => {
  const journal = Journal.open(await journalWithTwoOperations(), { readOnly: true });
  const doc = describeJournal(journal, { op: "op-a" });
  assert.deepEqual((doc.operation as { input: unknown }).input, 2);
  assert.deepEqual(doc.steps, [{ pos: 1, name: "echo", result: { by: 2 } }]);
  assert.deepEqual((doc.events as { op_pos: number }[]).map((e) => e.op_pos), [0]);
  assert.equal(
    formatJournal(doc).split("\n").slice(0, 5).join("\n"),
    [
      "operation op-a (#1, handler add, done)",
      `  input hash: ${(doc.operation as { input_hash: string }).input_hash}`,
      "  input:  2",
      '  result: {"ok":true,"value":2}',
      "steps (1):",
    ].join("\n"),
  );
  assert.throws(
    () => describeJournal(journal, { op: "op-z" }),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  journal.close();
});

Deno.test("a read-only open refuses a missing file and writes nothing", () => {
  const dir = tempDir("journal_view_test_");
  assert.throws(
    () => Journal.open(`${dir}/none.sqlite`, { readOnly: true }),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  assert.deepEqual([...Deno.readDirSync(dir)], []);
});
