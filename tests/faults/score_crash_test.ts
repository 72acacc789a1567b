/**
 * The score crash matrix: the Evaluator killed with SIGKILL at each journal point of a submission (its open:
 * `submit_signed:1`; its first score: `submit_signed:2`, `submit_sent:2`, `submit_final:2`) or the stage-0
 * Worker killed at each journal point of a score (its forward: `begin:2`, `complete:2`; its score head:
 * `begin:3`, `complete:3`), each restarted with the same home, still claims every group's first windows exactly
 * once: the chain shows one score per group at offset 0, all settled, and the evaluator's journal one
 * submission per purpose. The default suite runs one point (the evaluator after its first score was sent); NEURO_SLOW=1 runs all 8.
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../../core/canonical.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { Submitter } from "../../actors/runtime/submit.ts";
import { TransportClient } from "../../actors/runtime/transport.ts";
import { startTask, type TaskProcess } from "../actors/worker/_process.ts";
import { startEvaluationNetwork, trainCohort } from "../actors/evaluator/_network.ts";
import { until } from "../e2e/_ledger_procs.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
type Point = ["evaluator" | "worker", string];
const FULL: Point[] = [
  ["evaluator", "submit_signed:1"],
  ["evaluator", "submit_signed:2"],
  ["evaluator", "submit_sent:2"],
  ["evaluator", "submit_final:2"],
  ["worker", "begin:2"],
  ["worker", "complete:2"],
  ["worker", "begin:3"],
  ["worker", "complete:3"],
];
const REDUCED: Point[] = [["evaluator", "submit_sent:2"]];

for (const [who, at] of SLOW ? FULL : REDUCED) {
  Deno.test(`the ${who} killed at ${at} and restarted claims each group's first score once`, async () => {
    const net = await startEvaluationNetwork();
    await trainCohort(net);
    const args = [
      "--home",
      net.homes.evaluator,
      "--rpc",
      net.rpc,
      "--workers",
      net.workersFile,
      "--poll-ms",
      "100",
    ];
    let killed = false, closing = false;
    let worker: Promise<void> = Promise.resolve();
    if (who === "worker") {
      // Worker 0 is stage 0 of the first group's score; armed after training, its first operations are scores.
      await net.restartWorker(0, { NEURO_CRASH_AT: at });
      worker = net.workers[0]!.status.then(async (s) => {
        if (closing) return;
        killed = s.signal === "SIGKILL";
        await net.restartWorker(0);
      });
    }
    let evaluator: TaskProcess = await startTask("evaluator", args, {
      env: who === "evaluator" ? { NEURO_CRASH_AT: at } : {},
      listens: false,
    });
    const restarted = evaluator.status.then(async (s) => {
      if (closing || who !== "evaluator") return;
      killed = s.signal === "SIGKILL";
      evaluator = await startTask("evaluator", args, { listens: false });
    });
    try {
      const first = async () => {
        const live = (await net.chain.evaluation())?.live as JsonObject | null;
        const groups = (live?.groups ?? {}) as Record<string, { settled: number }>;
        return live !== null && Object.values(groups).every((g) => g.settled >= 4);
      };
      await until("every group's first score settles", first, 90_000);
      assert.equal(killed, true, `the ${who} did not reach ${at}`);
      const live = (await net.chain.evaluation())!.live as JsonObject;
      const scores = live.scores as JsonObject[];
      for (const g of ["baseline_retention", "baseline_fresh", "candidate_retention", "candidate_fresh"]) {
        const [side, role] = g.split("_");
        const at0 = scores.filter((s) => s.side === side && s.role === role && s.offset === 0);
        assert.equal(at0.length, 1, `${g}: ${JSON.stringify(at0)}`);
        assert.equal(at0[0]!.status, "settled");
      }
    } finally {
      closing = true;
      await evaluator.stop();
      await restarted;
      await worker;
      const journal = Journal.open(`${net.homes.evaluator}/journal.sqlite`);
      const subs = new Submitter(journal, new TransportClient(net.rpc, null)).records();
      journal.close();
      await net.close();
      // One open and one score per group at offset 0 were ever signed, and each was committed.
      const first = subs.filter((s) => s.intent.startsWith("open:") || /^score:.*:0:0$/.test(s.intent));
      assert.equal(first.length, 5, first.map((s) => s.intent).join("\n"));
      assert.deepEqual(first.map((s) => s.status), Array(5).fill("committed"));
    }
  });
}
