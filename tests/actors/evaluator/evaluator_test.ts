import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { startTask } from "../worker/_process.ts";
import { type EvaluationNetwork, startEvaluationNetwork, trainCohort } from "./_network.ts";

async function runEvaluator(
  net: EvaluationNetwork,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = new URL("../../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      `${root}tasks/evaluator.ts`,
      "--home",
      net.homes.evaluator,
      "--rpc",
      net.rpc,
      "--workers",
      net.workersFile,
      "--poll-ms",
      "100",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

Deno.test({
  name:
    "the evaluator scores a trained cohort to a decision; the referee gets the forged score rejected and its window is scored again",
  ignore: Deno.env.get("NEURO_SLOW") !== "1",
  async fn() {
    const net = await startEvaluationNetwork({ forge: "score" });
    try {
      await trainCohort(net);
      const before = await net.chain.lifecycle();
      const referee = await startTask("referee", [
        "--home",
        net.homes.referee,
        "--rpc",
        net.rpc,
        "--workers",
        net.workersFile,
        "--poll-ms",
        "100",
      ], { listens: false });
      try {
        const r = await runEvaluator(net);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        await referee.waitFor(/^outcome [0-9a-f]{64} caught/, 30_000);
        const facts = await net.chain.evaluation() as JsonObject;
        const e = (facts.recent as JsonObject[])[0]!;
        assert.equal(e.status, "decided");
        const scores = e.scores as JsonObject[];
        const rejected = scores.filter((s) => s.status === "rejected");
        assert.equal(rejected.length, 1, JSON.stringify(scores));
        assert.deepEqual(
          [rejected[0]!.side, rejected[0]!.role, rejected[0]!.offset, rejected[0]!.reason],
          ["candidate", "retention", 0, "mismatch: window loss"],
        );
        // The window was scored again at the same offset, honestly, and every group is complete.
        assert.equal(scores.filter((s) => s.status === "settled").length, 4 * 8);
        const d = e.decision as JsonObject;
        const after = await net.chain.lifecycle();
        assert.equal(after.serving_root, d.promoted ? before.learning_root : before.serving_root);
        assert.equal(after.learning_root, d.promoted ? before.learning_root : before.serving_root);
        assert.match(
          r.stdout,
          /^retention: mean change -?[0-9.]+ micronats, S=-?\d+ Q=\d+ G=-?\d+ (pass|fail)$/m,
        );
        assert.match(
          r.stdout,
          /^fresh: mean change -?[0-9.]+ micronats, S=-?\d+ Q=\d+ G=-?\d+ (pass|fail)$/m,
        );
        assert.match(r.stdout, /^serving root (moved to|stays) [0-9a-f]{64}$/m);
      } finally {
        await referee.stop();
      }
    } finally {
      await net.close();
    }
  },
});
