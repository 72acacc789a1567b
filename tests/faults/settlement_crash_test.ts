/**
 * The settlement crash matrix (issue 7, item 11): the sponsor or a worker is killed with SIGKILL at a journal
 * write point of a training step (`NEURO_CRASH_AT`, actors/runtime/crash_point.ts), restarted, and the step
 * must complete exactly once and be paid exactly once — against a real validator process.
 *
 * Sponsor points: `submit_signed`, `submit_sent`, `submit_final` of its reserve (1st submission) and of its
 * claim (2nd). Worker points: `begin` and `complete` of every operation of the stage (open, forward, [head,]
 * backward, update, receipt). The default suite runs a reduced set (5 cases, about half a minute); the full
 * matrix (28 cases, a few minutes) runs with NEURO_SLOW=1.
 *
 * After each case: the training round advanced by one, the learning root is the reference step's candidate,
 * each worker got exactly 400,000 atoms, the sponsor signed exactly two transactions (one reserve, one claim:
 * nonce 2), its bond came back, and its budget file charged exactly one attempt.
 */
import assert from "node:assert/strict";
import { assertFirstStepPaidOnce, runSponsor, startNetwork } from "../actors/sponsor/_network.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";

type Case = { who: "sponsor" | 0 | 1; at: string };

const SPONSOR_POINTS = ["submit_signed", "submit_sent", "submit_final"].flatMap((p) => [`${p}:1`, `${p}:2`]);
// Worker 0 runs open, forward, head, backward, update, receipt; worker 1 has no head.
const WORKER_POINTS = (ops: number) =>
  ["begin", "complete"].flatMap((p) => Array.from({ length: ops }, (_, i) => `${p}:${i + 1}`));

const FULL: Case[] = [
  ...SPONSOR_POINTS.map((at) => ({ who: "sponsor" as const, at })),
  ...WORKER_POINTS(6).map((at) => ({ who: 0 as const, at })),
  ...WORKER_POINTS(5).map((at) => ({ who: 1 as const, at })),
];
const REDUCED: Case[] = [
  { who: "sponsor", at: "submit_signed:1" },
  { who: "sponsor", at: "submit_sent:2" },
  { who: "sponsor", at: "submit_final:2" },
  { who: 1, at: "begin:2" },
  { who: 0, at: "complete:4" },
];

for (const c of SLOW ? FULL : REDUCED) {
  const name = c.who === "sponsor" ? "the sponsor" : `worker ${c.who}`;
  Deno.test(`${name} killed at ${c.at} and restarted: the step completes once and is paid once`, async () => {
    const workerEnv = c.who === "sponsor"
      ? []
      : c.who === 0
      ? [{ NEURO_CRASH_AT: c.at }]
      : [undefined, { NEURO_CRASH_AT: c.at }];
    const net = await startNetwork({ workers: 2, workerEnv });
    let crashed = false;
    let closing = false;
    try {
      if (c.who !== "sponsor") {
        const i = c.who;
        // Restart the worker (same home, same port) as soon as its crash point kills it.
        net.workers[i]!.status.then(async (s) => {
          if (closing) return;
          crashed = s.signal === "SIGKILL";
          await net.restartWorker(i);
        });
      }
      let run = await runSponsor(net, ["--steps", "1"], c.who === "sponsor" ? { NEURO_CRASH_AT: c.at } : {});
      if (c.who === "sponsor") {
        assert.equal(
          run.signal,
          "SIGKILL",
          `the sponsor was not killed at ${c.at}: ${run.stdout}${run.stderr}`,
        );
        run = await runSponsor(net, ["--steps", "1"]);
      } else {
        assert.ok(crashed, `worker ${c.who} was not killed at ${c.at}`);
      }
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.match(run.stdout, /^done 1 settled, 1\/4 attempts$/m);
      await assertFirstStepPaidOnce(net);
    } finally {
      closing = true;
      await net.close();
    }
  });
}
