/**
 * Journal speed (issue 5). Targets: replay of 10,000 events under 150 ms; restart of an actor with 100,000
 * finished operations under 1 s. Run with `deno task bench` or
 * `deno bench --allow-read --allow-write bench/journal_bench.ts`.
 *
 * Journals for the replay and restart cases are built once, outside the timed part, in one transaction each.
 */
import { canonical } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { defineActor, DurableActor } from "../actors/runtime/durable.ts";
import { EventLog } from "../actors/runtime/event_log.ts";
import { Journal, JOURNAL_FORMAT } from "../actors/runtime/journal.ts";
import { replayJournal } from "../actors/runtime/replay.ts";
import { counter, machines } from "../tests/actors/runtime/_counter.ts";

const dir = Deno.makeTempDirSync({ prefix: "journal_bench_" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
const enc = new TextEncoder();
const ENV = canonical({ height: 1, time: 0, params: {} });
const EVENT = canonical({ type: "add", by: 1 });
const OK = canonical({ ok: true });

/** A journal with `ops` finished operations and, when `events`, one counter event recorded by each. */
function build(name: string, ops: number, events: boolean): string {
  const path = `${dir}/${name}.sqlite`;
  const journal = Journal.open(path);
  new EventLog(journal).createInstance("c", counter, { status: "open", n: 0 });
  const op = journal.db.prepare(
    "INSERT INTO operations(op_id, format, handler, input_hash, input, status, result, seq) VALUES (?, ?, 'work', ?, ?, 'done', ?, ?)",
  );
  const ev = journal.db.prepare(
    `INSERT INTO events(instance, seq, format, machine, machine_version, op_id, op_pos, event, env, outcome, state,
       state_hash) VALUES ('c', ?, ?, 'counter', 1, ?, 0, ?, ?, ?, ?, ?)`,
  );
  journal.transaction(() => {
    for (let i = 0; i < ops; i++) {
      const opId = sha256Hex(enc.encode(`op${i}`));
      op.run(opId, JOURNAL_FORMAT, opId, enc.encode("1"), enc.encode(`{"ok":true,"value":${i + 1}}`), i + 1);
      if (events) {
        const state = canonical({ status: "open", n: i + 1 });
        ev.run(i, JOURNAL_FORMAT, opId, EVENT, ENV, OK, state, sha256Hex(enc.encode(state)));
      }
    }
  });
  journal.close();
  return path;
}

const events10k = build("events10k", 10_000, true);
const events100k = build("events100k", 100_000, true);
const ops100k = build("ops100k", 100_000, false);
const pairs = Journal.open(`${dir}/pairs.sqlite`);
let pair = 0;

const actor = defineActor({ name: "bench", machines, handlers: { work: () => Promise.resolve(1) } });

Deno.bench("begin+complete pair, committed with fsync (synchronous=FULL)", { group: "write" }, () => {
  const id = `op${pair++}`;
  pairs.begin(id, "h");
  pairs.complete(id, enc.encode('{"ok":true,"value":1}'));
});

Deno.bench("replay 10,000 recorded events (open, read, apply, check hashes)", { group: "replay" }, () => {
  const journal = Journal.open(events10k, { readOnly: true });
  const r = replayJournal(journal, machines);
  journal.close();
  if (!r.ok || r.value[0]!.events !== 10_000) throw new Error("replay failed");
});

Deno.bench("replay 100,000 recorded events", { group: "replay", n: 5 }, () => {
  const journal = Journal.open(events100k, { readOnly: true });
  const r = replayJournal(journal, machines);
  journal.close();
  if (!r.ok || r.value[0]!.events !== 100_000) throw new Error("replay failed");
});

Deno.bench("restart an actor with 100,000 finished operations", { group: "restart", n: 10 }, async () => {
  const journal = Journal.open(ops100k);
  await DurableActor.open(journal, actor);
  journal.close();
});

Deno.bench("restart an actor with 100,000 finished operations, each with a workflow event", {
  group: "restart",
  n: 5,
}, async () => {
  const journal = Journal.open(events100k);
  const a = await DurableActor.open(journal, actor);
  journal.close();
  if (a.query === undefined) throw new Error("unreachable");
});
