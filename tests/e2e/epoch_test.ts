/**
 * A shortened whole epoch end to end with real processes (`_epoch_net.ts`: a validator that reviews and votes
 * by itself, three workers, `deno task epoch` as a process): the controller collects and proposes a cohort,
 * the validator votes it in, the controller trains its 2 scheduled steps, scores every window of the
 * evaluation and records the gate's decision. Then what the chain and the journals hold is checked exactly:
 * the report, `status`, `history`, the day's budget refusing a second epoch (nothing changed), and
 * `deno task replay` passing on the controller's journal and naming an edited event by its index.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { JsonObject } from "../../core/canonical.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../workflows/params.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { utcDay } from "../../actors/epoch/daily_budget.ts";
import { configFromJson } from "../../kernels/config.ts";
import {
  buildEpochTemplate,
  EPOCH_EVALUATION_DOCUMENTS,
  EPOCH_MODEL,
  EPOCH_STEPS,
  runArgs,
  runEpoch,
  startEpochNet,
} from "./_epoch_net.ts";

/** Scores of one evaluation: 4 groups of one-window documents, 4 windows a score. */
const SCORES = 4 * EPOCH_EVALUATION_DOCUMENTS / 4;

const ROOT = new URL("../../", import.meta.url).pathname;

async function replay(journal: string): Promise<{ code: number; stdout: string }> {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "tasks/replay.ts", "--journal", journal],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: o.code, stdout: new TextDecoder().decode(o.stdout) };
}

function operations(home: string): string[] {
  const j = Journal.open(`${home}/journal.sqlite`, { readOnly: true });
  try {
    return j.operations().map((o) => `${o.opId} ${o.status}`);
  } finally {
    j.close();
  }
}

Deno.test({
  name:
    "deno task epoch runs a whole shortened epoch to the gate's decision and the day's budget refuses a second",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const template = await buildEpochTemplate();
    const net = await startEpochNet(template);
    try {
      const day = utcDay(Date.now());
      const r = await runEpoch(runArgs(net));
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const report = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as JsonObject;
      const lc = await net.chain.lifecycle();
      const facts = (await net.chain.evaluation()) as JsonObject;
      const decided = (facts.recent as JsonObject[])[0]!;
      const d = decided.decision as { promoted: boolean; reason: string };
      // The cohort the chain activated is the one the controller proposed, and every step settled once.
      const cohort = report.cohort as JsonObject;
      assert.equal(cohort.data_root, lc.data!.cohort!.data_root);
      assert.equal(cohort.activated, true);
      assert.equal(cohort.steps, EPOCH_STEPS);
      assert.deepEqual([cohort.yes_power, cohort.total_power], [4, 4]);
      const steps = report.steps as JsonObject[];
      assert.deepEqual(steps.map((s) => [s.index, s.outcome]), [[0, "settled"], [1, "settled"]]);
      for (const s of steps) {
        const claim = await net.chain.claim(s.claim_id as string);
        assert.equal((claim!.state as JsonObject).status, "settled");
      }
      assert.equal(lc.training_round, EPOCH_STEPS);
      // One identity block was grown before the first step, and the cohort trained the grown model.
      const growth = report.growth as JsonObject;
      assert.equal(growth.status, "settled");
      assert.equal((await net.chain.claim(growth.growth_id as string))!.state.status, "settled");
      const trained = await net.chain.manifest(lc.learning_root!);
      assert.equal(configFromJson(trained.config).num_hidden_layers, EPOCH_MODEL.num_hidden_layers + 1);
      // The decision is the chain's, and the serving root followed it.
      const evaluation = report.evaluation as JsonObject;
      assert.equal(evaluation.evaluation_id, decided.evaluation_id);
      assert.equal(evaluation.promoted, d.promoted);
      assert.equal(report.outcome, d.promoted ? "promoted" : "kept");
      assert.equal(evaluation.serving_root, lc.serving_root);
      assert.equal(lc.serving_root, d.promoted ? decided.candidate : decided.baseline);
      const scores = decided.scores as JsonObject[];
      assert.equal(scores.length, SCORES);
      assert.ok(scores.every((s) => s.status === "settled"));
      // The cost is the fees of every transaction the account sent (bonds all came back): propose, grow,
      // 2 × reserve and claim, open, 8 scores, finish.
      const account = await net.chain.account(net.accounts.controller!);
      assert.equal(account.nonce, 1 + 1 + 2 * EPOCH_STEPS + 1 + SCORES + 1);
      assert.equal(report.cost, account.nonce * DEVNET_PARAMS.fee);
      assert.equal(report.balance_before, 1_000 * ATOMS_PER_NEURO);
      assert.equal(report.balance_after, account.balance);
      assert.equal(account.balance, 1_000 * ATOMS_PER_NEURO - report.cost);
      assert.equal(report.charged_atoms, 100 * ATOMS_PER_NEURO);

      const status = await runEpoch(["status", "--home", net.home, "--json"]);
      assert.equal(status.code, 0, status.stderr);
      const s = JSON.parse(status.stdout) as JsonObject;
      assert.deepEqual(
        [s.epoch, s.phase, s.running, s.cohort, s.step],
        [1, "decided", false, cohort.data_root, { settled: 2, steps: 2 }],
      );
      assert.deepEqual(s.losses, steps.map((x) => x.loss));
      // Each group's settled scores: 8 one-window documents, 4 windows a score.
      const perGroup = EPOCH_EVALUATION_DOCUMENTS / 4;
      assert.deepEqual((s.evaluation as JsonObject).groups, {
        baseline_fresh: perGroup,
        baseline_retention: perGroup,
        candidate_fresh: perGroup,
        candidate_retention: perGroup,
      });
      assert.deepEqual(s.decision, { outcome: report.outcome, reason: report.reason });
      const history = await runEpoch(["history", "--home", net.home, "--json"]);
      assert.equal(history.code, 0, history.stderr);
      assert.deepEqual(JSON.parse(history.stdout), [{
        epoch: 1,
        outcome: report.outcome,
        reason: report.reason,
        cohort: cohort.data_root,
        steps: 2,
        attempts: 2,
        losses: steps.map((x) => x.loss),
        decision: d.promoted ? "promote" : "keep",
        cost: report.cost,
        charged_atoms: 100 * ATOMS_PER_NEURO,
      }]);
      const text = await runEpoch(["history", "--home", net.home]);
      assert.match(
        text.stdout,
        new RegExp(
          `^epoch 1: (promoted \\(promote\\)|kept \\(keep\\)); cohort [0-9a-f]{64}; 2 steps of 2 attempts; losses [0-9.]+ [0-9.]+; cost ${
            (1 + 1 + 2 * EPOCH_STEPS + 1 + SCORES + 1) * DEVNET_PARAMS.fee
          } atoms; `,
        ),
      );

      // The day allows one epoch: a second run is refused, sends nothing and charges nothing.
      const before = operations(net.home);
      const again = await runEpoch(runArgs(net));
      assert.equal(again.code, 1);
      assert.equal(again.stdout, "");
      assert.equal(
        again.stderr.trim().split("\n").at(-1),
        `error: Cannot charge epoch 2: 1 of 1 epochs are charged on ${day}; the next UTC day starts at ${
          new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString()
        } (day_budget_spent)`,
      );
      assert.deepEqual(operations(net.home), [...before, `charge/2/${day} done`]);
      assert.deepEqual(await net.chain.account(net.accounts.controller!), {
        ...account,
        height: (await net.chain.account(net.accounts.controller!)).height,
      });

      // Replay passes on the finished journal; an edited event is named by its index.
      const journal = `${net.home}/journal.sqlite`;
      const ok = await replay(journal);
      assert.equal(ok.code, 0, ok.stdout);
      assert.match(
        ok.stdout,
        /^ok epoch-1 epoch v1: 9 events, state [0-9a-f]{64}\nReplay passed: 1 instances, 9 events\n$/,
      );
      const edited = journal.replace(/journal\.sqlite$/, "edited.sqlite");
      Deno.copyFileSync(journal, edited);
      const db = new DatabaseSync(edited);
      const row = db.prepare("SELECT seq FROM events WHERE event LIKE '%\"activated\"%'").get() as {
        seq: number;
      };
      db.prepare("UPDATE events SET event = replace(event, '\"steps\":2', '\"steps\":3') WHERE seq = ?").run(
        row.seq,
      );
      db.close();
      const bad = await replay(edited);
      assert.equal(bad.code, 1);
      assert.match(
        bad.stdout,
        new RegExp(
          `^Replay diverges in instance epoch-1 \\(epoch v1\\) at event #${row.seq}: the state after the event differs\n`,
        ),
      );
      assert.match(bad.stdout, /\n {4}steps: expected 2, actual 3\n/);
    } finally {
      await net.close();
      Deno.removeSync(template, { recursive: true });
    }
  },
});
