/**
 * The Provider killed with SIGKILL at each journal write point of one answer (the `answer` operation begun
 * and completed: `begin`, `complete`; its `respond`: `submit_signed`, `submit_sent`, `submit_final`),
 * restarted with the same home, still answers the job exactly once and is paid exactly once. The default suite
 * runs 2 points; NEURO_SLOW=1 runs all 5.
 */
import assert from "node:assert/strict";
import { Journal } from "../../actors/runtime/journal.ts";
import { Submitter } from "../../actors/runtime/submit.ts";
import { TransportClient } from "../../actors/runtime/transport.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../workflows/params.ts";
import { runInfer, startInferenceNetwork } from "../actors/provider/_network.ts";
import { startTask, type TaskProcess } from "../actors/worker/_process.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const FULL = ["begin:1", "complete:1", "submit_signed:1", "submit_sent:1", "submit_final:1"];
const REDUCED = ["complete:1", "submit_sent:1"];

for (const at of SLOW ? FULL : REDUCED) {
  Deno.test(`the provider killed at ${at} and restarted answers the job once and is paid once`, async () => {
    const net = await startInferenceNetwork();
    const args = ["--home", net.homes.provider, "--rpc", net.rpc, "--poll-ms", "100"];
    let provider: TaskProcess = await startTask("provider", args, {
      env: { NEURO_CRASH_AT: at },
      listens: false,
    });
    let killed = false, closing = false;
    const restarted = provider.status.then(async (s) => {
      if (closing) return;
      killed = s.signal === "SIGKILL";
      provider = await startTask("provider", args, { listens: false });
    });
    try {
      const r = await runInfer(net, [
        "--provider",
        net.accounts.provider,
        "--prompt",
        "the answer is",
        "--json",
      ]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(killed, true, `the provider did not reach ${at}`);
      assert.equal(out.status, "settled");
      assert.equal(out.responses, 1);
      const job = await net.chain.inference(out.job_id);
      assert.equal(job!.claims.length, 1);
      assert.equal(
        (await net.chain.account(net.accounts.provider)).balance,
        100 * ATOMS_PER_NEURO - DEVNET_PARAMS.fee + out.paid,
      );
    } finally {
      closing = true;
      await restarted;
      await provider.stop();
      const journal = Journal.open(`${net.homes.provider}/journal.sqlite`);
      const subs = new Submitter(journal, new TransportClient(net.rpc, null)).records();
      journal.close();
      await net.close();
      assert.equal(subs.length, 1, "exactly one respond was ever signed");
      assert.equal(subs[0]!.status, "committed");
    }
  });
}
