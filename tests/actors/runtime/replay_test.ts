import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../../../core/digest.ts";
import { EventLog } from "../../../actors/runtime/event_log.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { formatDivergence, replayJournal } from "../../../actors/runtime/replay.ts";
import { counter, type CounterState, machines } from "./_counter.ts";
import { tempDir } from "./_temp.ts";

const ENV = { height: 1, time: 0, params: {} };

/** A journal with one counter instance that received add 1, add 2, add 3, add 4, close. */
function recordedJournal(): string {
  const path = `${tempDir("replay_test_")}/journal.sqlite`;
  const journal = Journal.open(path);
  const log = new EventLog(journal);
  log.createInstance("c", counter, { status: "open", n: 0 });
  let state: CounterState = { status: "open", n: 0 };
  for (
    const event of [1, 2, 3, 4].map((by) => ({ type: "add" as const, by })).concat([
      { type: "close" } as never,
    ])
  ) {
    const step = counter.apply(state, event, ENV);
    assert.ok(step.ok);
    state = step.state;
    log.append({ instance: "c", event, env: ENV, outcome: { ok: true }, state });
  }
  journal.close();
  return path;
}

function replayFile(path: string) {
  const journal = Journal.open(path);
  try {
    return replayJournal(journal, machines);
  } finally {
    journal.close();
  }
}

function edit(path: string, sql: string): void {
  const db = new DatabaseSync(path);
  db.exec(sql);
  db.close();
}

Deno.test("an intact journal replays to its recorded final state", () => {
  const r = replayFile(recordedJournal());
  assert.ok(r.ok);
  assert.deepEqual(r.value.map((i) => [i.instance, i.events, i.state]), [["c", 5, {
    status: "closed",
    n: 10,
  }]]);
});

Deno.test("a changed event is caught at its index with expected and actual states", () => {
  const path = recordedJournal();
  edit(path, `UPDATE events SET event = '{"by":7,"type":"add"}' WHERE seq = 2`);
  const r = replayFile(path);
  assert.ok(!r.ok);
  const d = r.divergence;
  assert.deepEqual([d.index, d.reason, d.event], [
    2,
    "the state after the event differs",
    '{"by":7,"type":"add"}',
  ]);
  assert.equal(d.expectedState, '{"n":6,"status":"open"}');
  assert.equal(d.actualState, '{"n":10,"status":"open"}');
  assert.equal(d.actualHash, sha256Hex(new TextEncoder().encode('{"n":10,"status":"open"}')));
  assert.equal(
    formatDivergence(d),
    [
      "Replay diverges in instance c (counter v1) at event #2: the state after the event differs",
      '  event:          {"by":7,"type":"add"}',
      "  differences (expected = recorded, actual = recomputed):",
      "    n: expected 6, actual 10",
      '  expected state: {"n":6,"status":"open"}',
      `  expected hash:  ${d.expectedHash}`,
      '  actual state:   {"n":10,"status":"open"}',
      `  actual hash:    ${d.actualHash}`,
    ].join("\n"),
  );
});

Deno.test("a removed event is caught at the first missing index", () => {
  const path = recordedJournal();
  edit(path, "DELETE FROM events WHERE seq = 1");
  const r = replayFile(path);
  assert.ok(!r.ok);
  assert.deepEqual([r.divergence.index, r.divergence.reason], [1, "expected event #1, the journal has #2"]);
});

Deno.test("a removed event with the rest renumbered is caught where the states part", () => {
  const path = recordedJournal();
  edit(path, "DELETE FROM events WHERE seq = 1; UPDATE events SET seq = seq - 1 WHERE seq > 1");
  const r = replayFile(path);
  assert.ok(!r.ok);
  assert.deepEqual([r.divergence.index, r.divergence.actualState, r.divergence.expectedState], [
    1,
    '{"n":4,"status":"open"}',
    '{"n":6,"status":"open"}',
  ]);
});

Deno.test("an added event is caught at its index", () => {
  const path = recordedJournal();
  edit(
    path,
    `UPDATE events SET seq = seq + 100 WHERE seq >= 3; UPDATE events SET seq = seq - 99 WHERE seq >= 100;
     INSERT INTO events SELECT instance, 3, format, machine, machine_version, op_id, op_pos, event, env, outcome,
       state, state_hash FROM events WHERE seq = 2`,
  );
  const r = replayFile(path);
  assert.ok(!r.ok);
  assert.deepEqual([r.divergence.index, r.divergence.event, r.divergence.actualState], [
    3,
    '{"by":3,"type":"add"}',
    '{"n":9,"status":"open"}',
  ]);
});

Deno.test("an event appended after the end of a closed counter is caught as a changed outcome", () => {
  const path = recordedJournal();
  edit(
    path,
    `INSERT INTO events SELECT instance, 5, format, machine, machine_version, op_id, op_pos, event, env, outcome,
       state, state_hash FROM events WHERE seq = 4`,
  );
  const r = replayFile(path);
  assert.ok(!r.ok);
  assert.deepEqual(
    [r.divergence.index, r.divergence.reason],
    [5, "the machine rejected the event with invalid_transition, the journal records acceptance"],
  );
});

Deno.test("a recorded state edited without its hash is caught", () => {
  const path = recordedJournal();
  edit(path, `UPDATE events SET state = '{"n":3, "status":"open"}' WHERE seq = 1`);
  const r = replayFile(path);
  assert.ok(!r.ok);
  assert.deepEqual([r.divergence.index, r.divergence.reason], [
    1,
    "the recorded state does not match its recorded hash",
  ]);
});

Deno.test("an unknown machine or another version is reported for the instance", () => {
  const path = recordedJournal();
  const journal = Journal.open(path);
  const none = replayJournal(journal, []);
  assert.ok(!none.ok);
  assert.deepEqual([none.divergence.index, none.divergence.reason], [
    null,
    "no machine named counter is registered",
  ]);
  const v2 = replayJournal(journal, [{ ...machines[0]!, version: 2 }]);
  assert.ok(!v2.ok);
  assert.equal(v2.divergence.reason, "the journal records version 1, the registry has 2");
  journal.close();
});
