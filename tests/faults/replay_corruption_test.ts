/**
 * A journal written by the real crash actor, then deliberately corrupted (an event changed, one removed, one
 * added), is caught by `deno task replay` at the first divergent event, with the event and both states.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../../core/digest.ts";
import { EventLog } from "../../actors/runtime/event_log.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { epoch } from "../../workflows/epoch.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import { startSink } from "./_sink.ts";
import { tempDir } from "../actors/runtime/_temp.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const hash = (text: string) => sha256Hex(new TextEncoder().encode(text));

async function run(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

function replay(journal: string, json = false) {
  const args = ["run", "--allow-read", "--allow-write", "tasks/replay.ts", "--journal", journal];
  args.push("--machines", "tests/actors/runtime/_counter.ts");
  if (json) args.push("--json");
  return run(args);
}

/** A journal of the crash actor's two operations: tally events add 1, add 1, add 2, add 1. */
async function actorJournal(): Promise<string> {
  const sink = startSink();
  const home = tempDir("corrupt_");
  try {
    const r = await run([
      "run",
      "--allow-all",
      "tests/faults/crash_actor.ts",
      "run",
      "--home",
      home,
      "--sink",
      sink.url,
    ]);
    assert.equal(r.code, 0, r.stderr);
  } finally {
    await sink.close();
  }
  return `${home}/journal.sqlite`;
}

function corrupted(source: string, name: string, sql: string): string {
  const path = source.replace(/journal\.sqlite$/, `${name}.sqlite`);
  Deno.copyFileSync(source, path);
  const db = new DatabaseSync(path);
  db.exec(sql);
  db.close();
  return path;
}

function report(
  index: number,
  reason: string,
  event: string,
  expected: string,
  actual: string,
  difference: string,
): string {
  return [
    `Replay diverges in instance tally (counter v1) at event #${index}: ${reason}`,
    `  event:          ${event}`,
    "  differences (expected = recorded, actual = recomputed):",
    `    ${difference}`,
    `  expected state: ${expected}`,
    `  expected hash:  ${hash(expected)}`,
    `  actual state:   ${actual}`,
    `  actual hash:    ${hash(actual)}`,
    "",
  ].join("\n");
}

Deno.test("replay of journals corrupted three ways stops at the first divergent event with a clear report", async () => {
  const source = await actorJournal();
  const intact = await replay(source);
  assert.equal(intact.code, 0, intact.stderr);
  assert.equal(
    intact.stdout,
    `ok tally counter v1: 4 events, state ${
      hash('{"n":5,"status":"open"}')
    }\nReplay passed: 1 instances, 4 events\n`,
  );

  const changed = await replay(
    corrupted(source, "changed", `UPDATE events SET event = '{"by":7,"type":"add"}' WHERE seq = 1`),
  );
  assert.equal(changed.code, 1);
  assert.equal(
    changed.stdout,
    report(
      1,
      "the state after the event differs",
      '{"by":7,"type":"add"}',
      '{"n":2,"status":"open"}',
      '{"n":8,"status":"open"}',
      "n: expected 2, actual 8",
    ),
  );

  const removed = await replay(
    corrupted(
      source,
      "removed",
      "DELETE FROM events WHERE seq = 1; UPDATE events SET seq = seq - 1 WHERE seq > 1",
    ),
  );
  assert.equal(removed.code, 1);
  assert.equal(
    removed.stdout,
    report(
      1,
      "the state after the event differs",
      '{"by":2,"type":"add"}',
      '{"n":4,"status":"open"}',
      '{"n":3,"status":"open"}',
      "n: expected 4, actual 3",
    ),
  );

  const added = corrupted(
    source,
    "added",
    `UPDATE events SET seq = seq + 100 WHERE seq >= 2; UPDATE events SET seq = seq - 99 WHERE seq >= 100;
     INSERT INTO events SELECT instance, 2, format, machine, machine_version, NULL, NULL, event, env, outcome,
       state, state_hash FROM events WHERE seq = 1`,
  );
  const addedText = await replay(added);
  assert.equal(addedText.code, 1);
  assert.equal(
    addedText.stdout,
    report(
      2,
      "the state after the event differs",
      '{"by":1,"type":"add"}',
      '{"n":2,"status":"open"}',
      '{"n":3,"status":"open"}',
      "n: expected 2, actual 3",
    ),
  );
  const addedJson = await replay(added, true);
  assert.equal(addedJson.code, 1);
  const doc = JSON.parse(addedJson.stdout);
  assert.deepEqual([doc.ok, doc.divergence.index, doc.divergence.instance], [false, 2, "tally"]);
  assert.deepEqual(doc.divergence.differences, ["n: expected 2, actual 3"]);
});

Deno.test("replay finds the project's machines in workflows/registry.ts without --machines", async () => {
  const path = `${tempDir("registry_replay_")}/journal.sqlite`;
  const journal = Journal.open(path);
  const log = new EventLog(journal);
  const env = { height: 1, time: 0, params: DEVNET_PARAMS };
  let state = { status: "collecting", epoch: 1, attempts_left: 8 } as Parameters<typeof epoch.apply>[0];
  log.createInstance("epoch-1", epoch, state);
  for (
    const event of [
      { type: "collected", data_root: "d".repeat(64), documents: 96 },
      { type: "proposed", proposal_id: "e".repeat(64) },
    ] as Parameters<typeof epoch.apply>[1][]
  ) {
    const step = epoch.apply(state, event, env);
    assert.ok(step.ok);
    state = step.state;
    log.append({ instance: "epoch-1", event, env, outcome: { ok: true }, state });
  }
  journal.close();
  const r = await run(["run", "--allow-read", "--allow-write", "tasks/replay.ts", "--journal", path]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(
    r.stdout,
    /^ok epoch-1 epoch v\d+: 2 events, state [0-9a-f]{64}\nReplay passed: 1 instances, 2 events\n$/,
  );
});
