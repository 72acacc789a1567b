import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { Journal, JOURNAL_FORMAT, operationId } from "../../../actors/runtime/journal.ts";
import { tempDir } from "./_temp.ts";

const enc = new TextEncoder();

function tempJournal(): { journal: Journal; path: string; dir: string } {
  const dir = tempDir("journal_test_");
  const path = `${dir}/journal.sqlite`;
  return { journal: Journal.open(path), path, dir };
}

function rejects(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => e instanceof ProtocolError && e.code === code);
}

Deno.test("operationId is sha256 of the canonical {session, operation}", () => {
  assert.equal(
    operationId("s", { step: 3 }),
    sha256Hex(enc.encode('{"operation":{"step":3},"session":"s"}')),
  );
});

Deno.test("journal opens in WAL mode with synchronous=FULL and records its format", () => {
  const { journal } = tempJournal();
  assert.equal(
    (journal.db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode,
    "wal",
  );
  assert.equal((journal.db.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous, 2);
  assert.equal(
    (journal.db.prepare("SELECT value FROM meta WHERE key='format'").get() as { value: string }).value,
    String(JOURNAL_FORMAT),
  );
  journal.close();
});

Deno.test("begin, complete and re-delivery return the recorded result byte for byte after reopening", () => {
  const { journal, path } = tempJournal();
  assert.deepEqual(journal.begin("op1", "h1", { handler: "work", input: enc.encode("[1]") }), {
    status: "new",
  });
  assert.deepEqual(journal.begin("op1", "h1"), { status: "begun" });
  const result = enc.encode('{"ok":true,"value":7}');
  assert.deepEqual(journal.complete("op1", result), result);
  journal.close();
  const again = Journal.open(path);
  const b = again.begin("op1", "h1");
  assert.equal(b.status, "done");
  assert.deepEqual(b.status === "done" ? b.result : null, result);
  const op = again.operation("op1")!;
  assert.equal(op.handler, "work");
  assert.deepEqual(op.input, enc.encode("[1]"));
  assert.equal(op.format, JOURNAL_FORMAT);
  again.close();
});

Deno.test("the same operation id with a different input hash is conflicting_operation and changes nothing", () => {
  const { journal } = tempJournal();
  journal.begin("op1", "h1");
  journal.complete("op1", enc.encode("1"));
  const before = journal.operations();
  rejects(() => journal.begin("op1", "h2"), "conflicting_operation");
  assert.deepEqual(journal.operations(), before);
  journal.close();
});

Deno.test("completing a done operation with other bytes is journal_divergence and keeps the first result", () => {
  const { journal } = tempJournal();
  journal.begin("op1", "h1");
  journal.complete("op1", enc.encode("1"));
  assert.deepEqual(journal.complete("op1", enc.encode("1")), enc.encode("1"));
  rejects(() => journal.complete("op1", enc.encode("2")), "journal_divergence");
  assert.deepEqual(journal.operation("op1")!.result, enc.encode("1"));
  journal.close();
});

Deno.test("completing an operation never begun is not_found and records nothing", () => {
  const { journal } = tempJournal();
  rejects(() => journal.complete("nope", enc.encode("1")), "not_found");
  assert.deepEqual(journal.operations(), []);
  journal.close();
});

Deno.test("unfinished lists begun operations in the order they began", () => {
  const { journal } = tempJournal();
  journal.begin("b", "h");
  journal.begin("a", "h");
  journal.begin("c", "h");
  journal.complete("a", enc.encode("1"));
  assert.deepEqual(journal.unfinished().map((o) => [o.opId, o.seq]), [["b", 1], ["c", 3]]);
  journal.close();
});

Deno.test("steps are recorded by position and read back after reopening", () => {
  const { journal, path } = tempJournal();
  journal.begin("op", "h");
  journal.recordStep("op", 0, "$now", "1700000000000");
  journal.recordStep("op", 1, "send", '{"sent":true}');
  journal.close();
  const again = Journal.open(path);
  assert.deepEqual(again.stepResult("op", 1), { name: "send", result: '{"sent":true}' });
  assert.equal(again.stepResult("op", 2), null);
  assert.deepEqual(again.steps("op").map((s) => s.pos), [0, 1]);
  assert.throws(() => again.recordStep("op", 1, "send", "1"));
  assert.deepEqual(again.stepResult("op", 1), { name: "send", result: '{"sent":true}' });
  again.close();
});

Deno.test("a journal of another format is refused with journal_divergence", () => {
  const { journal, path } = tempJournal();
  journal.close();
  const db = new DatabaseSync(path);
  db.exec("UPDATE meta SET value = '99' WHERE key = 'format'");
  db.close();
  rejects(() => Journal.open(path), "journal_divergence");
});
