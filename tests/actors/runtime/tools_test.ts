/** The two journal tools as a user runs them: `tasks/journal.ts` and `tasks/replay.ts` in real processes. */
import assert from "node:assert/strict";
import { defineActor, DurableActor } from "../../../actors/runtime/durable.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { counter, machines } from "./_counter.ts";
import { tempDir } from "./_temp.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function task(file: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", file, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

async function journalFile(): Promise<string> {
  const path = `${tempDir("tools_test_")}/journal.sqlite`;
  const actor = await DurableActor.open(
    Journal.open(path),
    defineActor({
      name: "tools",
      machines,
      handlers: {
        add: (ctx, input) => {
          const s = ctx.workflow("c", counter, { status: "open", n: 0 }).record(
            { type: "add", by: input as number },
            { height: 1, time: 0, params: {} },
          );
          return Promise.resolve(s.ok ? s.state.n : s.code);
        },
      },
    }),
  );
  await actor.deliver("add", "op-1", 4);
  actor.journal.close();
  return path;
}

Deno.test("journal --json prints one canonical document; --op shows one operation; bad input exits non-zero", async () => {
  const path = await journalFile();
  const doc = await task("tasks/journal.ts", ["--journal", path, "--json"]);
  assert.equal(doc.code, 0, doc.stderr);
  const parsed = JSON.parse(doc.stdout);
  assert.deepEqual(parsed.operations.map((o: { op_id: string; result: unknown }) => [o.op_id, o.result]), [
    ["op-1", { ok: true, value: 4 }],
  ]);
  assert.equal(parsed.format, 1);
  const op = await task("tasks/journal.ts", [path, "--op", "op-1"]);
  assert.equal(op.code, 0, op.stderr);
  assert.ok(op.stdout.startsWith("operation op-1 (#1, handler add, done)\n"));
  const missing = await task("tasks/journal.ts", []);
  assert.deepEqual([missing.code, missing.stderr.split("\n")[0]], [2, "error: --journal is required"]);
  const absent = await task("tasks/journal.ts", ["--journal", `${path}.nope`]);
  assert.equal(absent.code, 1);
  assert.equal(absent.stderr, `error: Cannot open journal ${path}.nope: no such file (not_found)\n`);
  const unknownOp = await task("tasks/journal.ts", ["--journal", path, "--op", "op-9"]);
  assert.equal(unknownOp.code, 1);
  assert.match(unknownOp.stderr, /Cannot show operation op-9: not in the journal \(not_found\)/);
});

Deno.test("replay reports a journal whose machine it does not know, and passes with --machines", async () => {
  const path = await journalFile();
  const unknown = await task("tasks/replay.ts", [path]);
  assert.equal(unknown.code, 1);
  assert.equal(
    unknown.stdout,
    "Replay diverges in instance c (counter v1): no machine named counter is registered\n",
  );
  const known = await task("tasks/replay.ts", [
    path,
    "--machines",
    "tests/actors/runtime/_counter.ts",
    "--json",
  ]);
  assert.equal(known.code, 0, known.stderr);
  assert.deepEqual(
    JSON.parse(known.stdout).instances.map((
      i: { instance: string; events: number },
    ) => [i.instance, i.events]),
    [["c", 1]],
  );
  const help = await task("tasks/replay.ts", ["--help"]);
  assert.equal(help.code, 0);
  assert.ok(help.stdout.startsWith("deno task replay --journal FILE [options]"));
  const bad = await task("tasks/replay.ts", ["--frobnicate"]);
  assert.equal(bad.code, 2);
});
