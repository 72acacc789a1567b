/**
 * The crash matrix: the actor of `crash_actor.ts` is killed with SIGKILL at every journal write point in
 * turn (`NEURO_CRASH_AT=<point>:<n>` for every point and every time a clean run reaches it), then restarted
 * and killed again the first time the recovery reaches the same point, then restarted to the end.
 * After each case: the external effects happened exactly once (one file per step key with the journaled
 * content, one accepted delivery body per key, one transaction hash per intent), a second restart
 * re-delivers identical bytes, and the journal replays cleanly through the machine.
 *
 * Why exactly once is achievable: the journal makes execution at-least-once (an unfinished step runs again
 * after a crash), and every effect is keyed by its step key, which is the same on every attempt; a crash
 * between an effect and its journal write (`effect`) therefore repeats the effect with the same key and the
 * same content, and the receiver absorbs it. Transactions are never signed twice: the signed bytes are
 * journaled before they are sent, and a resumed submission reuses them.
 */
import assert from "node:assert/strict";
import { Journal } from "../../actors/runtime/journal.ts";
import { replayJournal } from "../../actors/runtime/replay.ts";
import { machines } from "../actors/runtime/_counter.ts";
import { startSink } from "./_sink.ts";
import { tempDir } from "../actors/runtime/_temp.ts";

const ACTOR = new URL("./crash_actor.ts", import.meta.url).pathname;

async function runActor(home: string, sinkUrl: string, crashAt?: string) {
  const env: Record<string, string> = {};
  if (crashAt !== undefined) env.NEURO_CRASH_AT = crashAt;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", ACTOR, "run", "--home", home, "--sink", sinkUrl],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    signal: out.signal,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** The operation lines of a run (without the crash-point line). */
function resultLines(stdout: string): string[] {
  return stdout.trim().split("\n").filter((l) => l.startsWith('{"op":'));
}

type Value = {
  n: number;
  at: number;
  nonce: string;
  file: { key: string; bytes: number };
  notified: { key: string; answer: { accepted: boolean; key: string } };
  tx: { hash: string; status: string; height: number };
};

function checkCase(home: string, lines: string[], sink: ReturnType<typeof startSink>): void {
  assert.equal(lines.length, 2);
  const values = lines.map((l) => {
    const { op, result } = JSON.parse(l) as { op: string; result: string };
    const parsed = JSON.parse(result) as { ok: boolean; value: Value };
    assert.equal(parsed.ok, true);
    return { op, value: parsed.value };
  });
  assert.deepEqual(values.map((v) => v.value.n), [2, 5]);
  // The file effect: exactly one file per step key, holding the journaled time and randomness.
  const files = [...Deno.readDirSync(`${home}/effects`)].map((e) => e.name).filter((n) => !n.startsWith("."))
    .sort();
  assert.deepEqual(files, values.map((v) => `${v.value.file.key}.json`).sort());
  for (const { op, value } of values) {
    const text = Deno.readTextFileSync(`${home}/effects/${value.file.key}.json`);
    assert.equal(text, JSON.stringify({ at: value.at, n: value.n === 2 ? 1 : 2, nonce: value.nonce, op }));
  }
  // The HTTP effect: one key per operation, and every attempt under a key carried the same body.
  assert.deepEqual([...sink.log.deliveries.keys()].sort(), values.map((v) => v.value.notified.key).sort());
  for (const bodies of sink.log.deliveries.values()) assert.equal(new Set(bodies).size, 1);
  // The transaction: one signature (one hash) per intent, committed.
  assert.deepEqual([...sink.log.intents.values()].map((s) => s.size), [1, 1]);
  for (const { op, value } of values) {
    assert.deepEqual([...sink.log.intents.get(op)!], [value.tx.hash]);
    assert.equal(value.tx.status, "committed");
  }
  // The journal replays through the machine and agrees with the printed results byte for byte.
  const journal = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  try {
    const replay = replayJournal(journal, machines);
    assert.ok(replay.ok, replay.ok ? "" : JSON.stringify(replay.divergence));
    assert.deepEqual(replay.value.map((i) => [i.instance, i.events, i.state]), [["tally", 4, {
      status: "open",
      n: 5,
    }]]);
    assert.deepEqual(
      journal.operations().map((o) => new TextDecoder().decode(o.result!)),
      values.map((_, i) => JSON.parse(lines[i]!).result),
    );
    assert.deepEqual(journal.unfinished(), []);
  } finally {
    journal.close();
  }
}

Deno.test("crash matrix: SIGKILL at every journal write point, then restart, gives exactly-once effects", async (t) => {
  const sink = startSink();
  try {
    const cleanHome = tempDir("crash_clean_");
    const clean = await runActor(cleanHome, sink.url);
    assert.equal(clean.code, 0, clean.stderr);
    checkCase(cleanHome, resultLines(clean.stdout), sink);
    const hits = JSON.parse(clean.stdout.trim().split("\n").at(-1)!).hits as Record<string, number>;
    const cases = Object.entries(hits).flatMap(([point, count]) =>
      Array.from({ length: count }, (_, i) => `${point}:${i + 1}`)
    );
    assert.ok(cases.length >= 30, `only ${cases.length} crash cases: ${JSON.stringify(hits)}`);
    const absorbed = { deliveries: 0 };
    let doubleKills = 0;
    for (const crashAt of cases) {
      await t.step(`killed at ${crashAt}`, async () => {
        sink.reset();
        const home = tempDir("crash_case_");
        const killed = await runActor(home, sink.url, crashAt);
        assert.equal(killed.signal, "SIGKILL", `expected SIGKILL at ${crashAt}: ${killed.stderr}`);
        // The recovery itself is killed at the first time it reaches the same point (if it does).
        const point = crashAt.split(":")[0]!;
        const recovering = await runActor(home, sink.url, `${point}:1`);
        assert.ok(recovering.signal === "SIGKILL" || recovering.code === 0, recovering.stderr);
        if (recovering.signal === "SIGKILL") doubleKills++;
        const restarted = await runActor(home, sink.url);
        assert.equal(restarted.code, 0, restarted.stderr);
        const lines = resultLines(restarted.stdout);
        checkCase(home, lines, sink);
        for (const bodies of sink.log.deliveries.values()) absorbed.deliveries += bodies.length - 1;
        const again = await runActor(home, sink.url);
        assert.equal(again.code, 0, again.stderr);
        assert.deepEqual(resultLines(again.stdout), lines);
        checkCase(home, lines, sink);
        Deno.removeSync(home, { recursive: true });
      });
    }
    // The matrix really exercised the duplicate path: a kill between an effect and its journal write
    // repeated the delivery, and the receiver absorbed it by key.
    assert.ok(absorbed.deliveries >= 1, "no case repeated a delivery");
    assert.ok(doubleKills >= 20, `only ${doubleKills} recoveries were killed again`);
    Deno.removeSync(cleanHome, { recursive: true });
  } finally {
    await sink.close();
  }
});
