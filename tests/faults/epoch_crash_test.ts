/**
 * The epoch crash matrix: `deno task epoch` SIGKILLed at its journal write points across a whole (shortened)
 * epoch and run again with the same command each time, until the epoch finishes. Every run starts from a copy
 * of the same template network (`../e2e/_epoch_net.ts`: same keys, same genesis), so the crashed epoch must end
 * exactly as an uninterrupted one: the same report (cohort, steps with their assignment and claim ids and
 * losses, evaluation, decision, cost — only the activation height may differ, blocks being timed), the same
 * learning and serving roots, the same balances and account nonce (every step paid once, no transaction sent
 * twice), one epoch operation and one charge in the journal, and the journal replays.
 *
 * Crash points are counted by the restarted process, which writes only what is new: `NEURO_CRASH_AT=<p>:1`
 * kills it right after its next new write of kind `<p>`, so repeating it walks through every such write of
 * the epoch. Points that follow an effect not yet journaled (`effect`, `submit_sent`) are met again first by
 * the re-run, so the walk uses `<p>:2` after the first kill. The default suite runs one mixed walk (a kill in
 * every phase); `NEURO_SLOW=1` walks every write of every kind, one network per kind (`NEURO_CRASH_POINTS`,
 * a comma-separated list of kinds, runs only those walks: shards of the slow matrix). Every run of the
 * controller is bounded (`RUN_MS`): a restart that waits forever fails the walk, naming its point.
 */
import assert from "node:assert/strict";
import { decodeCanonical, type JsonObject } from "../../core/canonical.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { charges } from "../../actors/epoch/daily_budget.ts";
import { CRASH_POINTS } from "../../actors/runtime/crash_point.ts";
import {
  buildEpochTemplate,
  type EpochNet,
  type EpochRun,
  runArgs,
  runEpoch,
  spawnEpoch,
  startEpochNet,
} from "../e2e/_epoch_net.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const ROOT = new URL("../../", import.meta.url).pathname;
/** The point kinds the slow walks cover (`NEURO_CRASH_POINTS`, default every one). */
const WALKED = (Deno.env.get("NEURO_CRASH_POINTS") ?? CRASH_POINTS.join(",")).split(",");
for (const p of WALKED) {
  if (!(CRASH_POINTS as readonly string[]).includes(p)) {
    throw new Error(`Cannot read NEURO_CRASH_POINTS: ${p} is not one of ${CRASH_POINTS.join(", ")}`);
  }
}
/**
 * The longest one run of the controller may take: a whole uninterrupted epoch takes well under a minute on a
 * quiet machine, so ten minutes is a hang, not a slow machine.
 */
const RUN_MS = 600_000;

/** Runs the controller (as `runEpoch`), SIGTERMed after `RUN_MS`; the run fails the walk if it was. */
async function boundedRun(args: readonly string[], env: Record<string, string> = {}): Promise<EpochRun> {
  const { child, done } = spawnEpoch(args, env);
  const timer = setTimeout(() => child.kill("SIGTERM"), RUN_MS);
  try {
    const run = await done;
    if (run.signal === "SIGTERM") {
      throw new Error(
        `the controller (${JSON.stringify(env)}) still ran after ${RUN_MS} ms:\n${run.stdout}${run.stderr}`,
      );
    }
    return run;
  } finally {
    clearTimeout(timer);
  }
}

/** What an epoch ended with, as compared between runs. */
interface Outcome {
  report: JsonObject;
  lifecycle: JsonObject;
  accounts: Record<string, { balance: number; nonce: number }>;
  /** The Curator's collect operations (`{source, start, end}` each), in journal order. */
  collects: JsonObject[];
}

/** The collect operations of the controller's Curator journal. */
function collects(home: string): JsonObject[] {
  const j = Journal.open(`${home}/curator/journal.sqlite`, { readOnly: true });
  try {
    return j.operations().filter((o) => o.handler === "collect").map((o) =>
      decodeCanonical(o.input!) as JsonObject
    );
  } finally {
    j.close();
  }
}

/**
 * The outcome of the finished epoch: its report as the journal recorded it, the chain's roots and every
 * account. `run`, the last run, either finished the epoch or (killed after the epoch's result was committed)
 * found it finished and was refused a second epoch by the day's budget.
 */
async function outcome(net: EpochNet, run: EpochRun): Promise<Outcome> {
  if (run.code !== 0) assert.match(run.stderr, /\(day_budget_spent\)\n$/, run.stdout + run.stderr);
  const j = Journal.open(`${net.home}/journal.sqlite`, { readOnly: true });
  let report: JsonObject;
  try {
    const r = decodeCanonical(j.operation("epoch/1")!.result!) as { ok: boolean; value: JsonObject };
    assert.equal(r.ok, true, JSON.stringify(r));
    report = r.value;
  } finally {
    j.close();
  }
  const cohort = { ...(report.cohort as JsonObject) };
  delete cohort.activated_height;
  const lc = await net.chain.lifecycle();
  const accounts: Outcome["accounts"] = {};
  for (const [role, id] of Object.entries(net.accounts)) {
    const a = await net.chain.account(id);
    accounts[role] = { balance: a.balance, nonce: a.nonce };
  }
  return {
    report: { ...report, cohort },
    lifecycle: {
      learning_root: lc.learning_root,
      serving_root: lc.serving_root,
      training_round: lc.training_round,
      data_root: lc.data?.data_root ?? null,
    },
    accounts,
    collects: collects(net.home),
  };
}

/** The journal facts every finished home must show: one epoch, done; one charge. */
async function checkJournal(home: string): Promise<void> {
  const j = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  try {
    const epochs = j.operations().filter((o) => o.handler === "epoch");
    assert.deepEqual(epochs.map((o) => [o.opId, o.status]), [["epoch/1", "done"]]);
    assert.equal(charges(j).length, 1);
  } finally {
    j.close();
  }
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "tasks/replay.ts", "--journal", `${home}/journal.sqlite`],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  assert.equal(o.code, 0, new TextDecoder().decode(o.stdout));
}

let template: string | null = null;
let reference: Outcome | null = null;

async function prepared(): Promise<{ template: string; reference: Outcome }> {
  template ??= await buildEpochTemplate();
  if (reference === null) {
    const net = await startEpochNet(template);
    try {
      const run = await boundedRun(runArgs(net));
      assert.equal(run.code, 0, run.stdout + run.stderr);
      reference = await outcome(net, run);
      await checkJournal(net.home);
    } finally {
      await net.close();
    }
  }
  return { template, reference };
}

/**
 * Runs the epoch killed at the point `next(k)` names for its k-th kill, until it names none (then runs it to
 * its end) or a run is not killed; `between(k)` runs after the k-th kill. Returns the last run and the kills.
 */
async function walk(
  net: EpochNet,
  next: (kills: number) => string | null,
  between: (kills: number) => Promise<void> = () => Promise.resolve(),
): Promise<{ run: EpochRun; kills: string[] }> {
  const kills: string[] = [];
  for (;;) {
    const at = next(kills.length);
    if (at === null) return { run: await boundedRun(runArgs(net)), kills };
    const r = await boundedRun(runArgs(net), { NEURO_CRASH_AT: at });
    if (r.signal !== "SIGKILL") {
      // The point was not reached again: the epoch finished (or failed) on this run.
      return { run: r, kills };
    }
    kills.push(at);
    await between(kills.length);
  }
}

/**
 * One kill in every phase: charged; the first of the 3 collects done (the train source has 120 rows, more
 * than the epoch's `collect_rows` of 100: the restart must collect only the other two sources, not the train
 * source's next rows); the Curator's proposal begun (the restart must take that proposal as the epoch's, not
 * wait for the chain to take another); collected, activated, the first training transaction signed (then a
 * worker vanishes and comes back, and the validator is stopped and started), a transaction resent, a step, a
 * score, the end.
 */
const MIXED = [
  "begin:2",
  "complete:1",
  "begin:3",
  "event:1",
  "event:2",
  "submit_signed:2",
  "submit_sent:2",
  "event:3",
  "submit_final:8",
  "complete:1",
];

Deno.test({
  name: "the controller killed in every phase of an epoch and restarted ends as an uninterrupted run",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: SLOW,
  async fn() {
    const { template, reference } = await prepared();
    const net = await startEpochNet(template);
    try {
      const { run, kills } = await walk(net, (k) => MIXED[k] ?? null, async (k) => {
        if (k !== 6) return;
        await net.bounceWorker(1);
        await net.bounceValidator();
      });
      assert.deepEqual(kills, MIXED, "every planned point was reached and killed the controller");
      assert.deepEqual(await outcome(net, run), reference);
      await checkJournal(net.home);
    } finally {
      await net.close();
    }
  },
});

for (const point of WALKED) {
  Deno.test({
    name:
      `the controller killed at every ${point} write of an epoch, restarted each time, ends as an uninterrupted run`,
    sanitizeResources: false,
    sanitizeOps: false,
    ignore: !SLOW,
    async fn() {
      const { template, reference } = await prepared();
      const net = await startEpochNet(template);
      try {
        const again = point === "effect" || point === "submit_sent" ? 2 : 1;
        const { run, kills } = await walk(net, (k) => (k > 500 ? null : `${point}:${k === 0 ? 1 : again}`));
        assert.ok(kills.length > 0, `${point} was never reached`);
        assert.deepEqual(await outcome(net, run), reference);
        await checkJournal(net.home);
      } finally {
        await net.close();
      }
    },
  });
}

Deno.test({
  name: "a running controller waits out a stopped validator and a worker that vanished and came back",
  sanitizeResources: false,
  sanitizeOps: false,
  ignore: !SLOW,
  async fn() {
    const { template, reference } = await prepared();
    const net = await startEpochNet(template);
    try {
      const { done } = spawnEpoch(runArgs(net));
      const phase = async (want: string) => {
        for (let i = 0; i < 1_200; i++) {
          const s = await runEpoch(["status", "--home", net.home, "--json"]);
          if (s.code === 0 && (JSON.parse(s.stdout) as JsonObject).phase === want) return;
          await new Promise((r) => setTimeout(r, 250));
        }
        throw new Error(`the epoch never reached ${want}`);
      };
      await phase("training");
      await net.bounceWorker(1, 3_000);
      await net.bounceValidator(3_000);
      await phase("evaluating");
      await net.bounceValidator(3_000);
      await net.bounceWorker(2, 3_000);
      const run = await done;
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.deepEqual(await outcome(net, run), reference);
      await checkJournal(net.home);
    } finally {
      await net.close();
    }
  },
});

globalThis.addEventListener("unload", () => {
  if (template !== null) Deno.removeSync(template, { recursive: true });
});
