/**
 * The referee killed with SIGKILL at a journal write point of a dispute (its stage checks: `begin`,
 * `complete`; its challenge, uploads, seals and resolve: `submit_signed`, `submit_sent`, `submit_final`),
 * restarted, still gets the forged claim rejected — and challenges it exactly once, with no transaction
 * signed twice. The default suite runs 3 cases; NEURO_SLOW=1 runs every point of the 2 checks and the 8
 * transactions of the dispute (1 challenge, 3 objects uploaded and sealed, 1 resolve).
 */
import assert from "node:assert/strict";
import { ChainClient } from "../../actors/common/chain.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../workflows/params.ts";
import { runSponsor, startNetwork } from "../actors/sponsor/_network.ts";
import { startTask, type TaskProcess } from "../actors/worker/_process.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const FULL = [
  ...["begin", "complete"].flatMap((p) => [`${p}:1`, `${p}:2`]),
  ...["submit_signed", "submit_sent", "submit_final"].flatMap((p) =>
    Array.from({ length: 8 }, (_, i) => `${p}:${i + 1}`)
  ),
];
const REDUCED = ["complete:2", "submit_sent:1", "submit_signed:4"];

for (const at of SLOW ? FULL : REDUCED) {
  Deno.test(`the referee killed at ${at} and restarted still gets the forged claim rejected, challenging once`, async () => {
    // An 80-block window (12 s): a killed referee restarts, replays and still challenges in time on a loaded
    // machine; the caught claim ends at the resolve, so the wide window costs nothing.
    const net = await startNetwork({ workers: 2, forge: [null, "optimizer"], challengeBlocks: 80 });
    const args = [
      "--home",
      net.refereeHome,
      "--rpc",
      net.rpc,
      "--workers",
      net.workersFile,
      "--poll-ms",
      "100",
    ];
    let referee: TaskProcess = await startTask("referee", args, {
      env: { NEURO_CRASH_AT: at },
      listens: false,
    });
    let killed = false;
    let closing = false;
    const restarted = referee.status.then(async (s) => {
      if (closing) return;
      killed = s.signal === "SIGKILL";
      referee = await startTask("referee", args, { listens: false });
    });
    try {
      const run = await runSponsor(net, ["--steps", "1", "--budget", "1"]);
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.match(run.stdout, /^step 0 rejected: mismatch: optimizer update/m);
      // The last points (the resolve's outcome) may come after the sponsor saw the rejection.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([restarted, new Promise((r) => (timer = setTimeout(r, 120_000)))]);
      clearTimeout(timer);
      assert.ok(killed, `the referee was not killed at ${at}`);
      const chain = new ChainClient(net.rpc);
      const ref = await chain.account(net.accounts.referee);
      assert.equal(
        ref.balance,
        50 * ATOMS_PER_NEURO + DEVNET_PARAMS.claim_bond / 2 - ref.nonce * DEVNET_PARAMS.fee,
      );
      assert.equal(ref.nonce, 8);
      await referee.waitFor(/^outcome [0-9a-f]{64} caught: rejected mismatch: optimizer update$/);
      await referee.waitFor(/ claims=1 stages_checked=2 behind_stages=0 challenges=1$/);
    } finally {
      closing = true;
      await referee.stop();
      await net.close();
    }
  });
}
