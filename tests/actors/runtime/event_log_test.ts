import assert from "node:assert/strict";
import { sha256Hex } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { EventLog } from "../../../actors/runtime/event_log.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { counter } from "./_counter.ts";
import { tempDir } from "./_temp.ts";

function tempLog(): EventLog {
  return new EventLog(Journal.open(`${tempDir("event_log_test_")}/journal.sqlite`));
}

Deno.test("events get indexes from 0 per instance and carry format, machine name, version and state hash", () => {
  const log = tempLog();
  log.createInstance("a", counter, { status: "open", n: 0 });
  log.createInstance("b", counter, { status: "open", n: 0 });
  const e0 = log.append({
    instance: "a",
    event: { type: "add", by: 1 },
    env: {},
    outcome: { ok: true },
    state: { status: "open", n: 1 },
  });
  const f0 = log.append({
    instance: "b",
    opId: "op",
    opPos: 2,
    event: { type: "close" },
    env: {},
    outcome: { ok: true },
    state: { status: "closed", n: 0 },
  });
  const e1 = log.append({
    instance: "a",
    event: { type: "add", by: 2 },
    env: {},
    outcome: { ok: true },
    state: { status: "open", n: 3 },
  });
  assert.deepEqual([e0.seq, f0.seq, e1.seq], [0, 0, 1]);
  assert.deepEqual([e1.format, e1.machine, e1.machineVersion], [1, "counter", 1]);
  assert.equal(e1.stateHash, sha256Hex(new TextEncoder().encode('{"n":3,"status":"open"}')));
  assert.deepEqual(log.eventAt("op", 2), f0);
  assert.equal(log.eventAt("op", 3), null);
  assert.deepEqual(log.events("a"), [e0, e1]);
  assert.deepEqual(log.instances().map((i) => i.instance), ["a", "b"]);
  log.journal.close();
});

Deno.test("creating an instance again with another machine or initial state is journal_divergence", () => {
  const log = tempLog();
  const first = log.createInstance("a", counter, { status: "open", n: 0 });
  assert.deepEqual(log.createInstance("a", counter, { status: "open", n: 0 }), first);
  for (
    const [machine, initial] of [[{ name: "counter", version: 2 }, { status: "open", n: 0 }], [counter, {
      status: "open",
      n: 1,
    }]] as const
  ) {
    assert.throws(
      () => log.createInstance("a", machine, initial),
      (e: unknown) => e instanceof ProtocolError && e.code === "journal_divergence",
    );
  }
  assert.deepEqual(log.instances(), [first]);
  log.journal.close();
});

Deno.test("appending to an instance that does not exist is not_found and records nothing", () => {
  const log = tempLog();
  assert.throws(
    () => log.append({ instance: "x", event: { type: "close" }, env: {}, outcome: { ok: true }, state: {} }),
    (e: unknown) => e instanceof ProtocolError && e.code === "not_found",
  );
  assert.deepEqual(log.events("x"), []);
  log.journal.close();
});
