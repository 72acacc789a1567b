/**
 * The Curator's `propose` on a real network (four validator processes, no auto-review, proposals expire): a
 * SIGKILL at each journal write point of `propose`, then a restart of the same command, and the proposal on
 * the chain is the one an uninterrupted curator makes (same data root, documents and windows), signed once
 * (one submission, account nonce 1). `NEURO_SLOW=1` runs every point; the default suite runs three.
 */
import { assertEquals } from "../_assert.ts";
import { getJson, until } from "./_ledger_procs.ts";
import { type CuratorNet, runCurator, startCuratorNet } from "./_curator_net.ts";
import { copyCorpus, submissions } from "./_curator_tools.ts";

const SLOW = Deno.env.get("NEURO_SLOW") === "1";
const PROPOSE_POINTS = SLOW
  ? ["begin:1", "step:1", "step:2", "submit_signed:1", "submit_sent:1", "submit_final:1", "complete:1"]
  : ["step:2", "submit_signed:1", "submit_sent:1"];

const args = (net: CuratorNet, home: string) => ["--home", home, "--rpc", net.rpc, "--sources", net.sources];

interface ProposalState {
  state: { status: string };
}

Deno.test({
  name:
    "Curator: a SIGKILL at each journal write point of propose, then a restart: the same proposal, signed once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const net = await startCuratorNet({
      curators: 1 + PROPOSE_POINTS.length,
      params: { proposal_blocks: 40 },
    });
    try {
      const [control, ...crashed] = net.curators as [string, ...string[]];
      await runCurator(["collect", ...args(net, control), "--rows", "200"]);
      for (const home of crashed) await copyCorpus(control, home);
      const expire = async (id: string) =>
        await until(
          `proposal ${id} to expire`,
          async () =>
            (await getJson<ProposalState>(`${net.rpc}/data/proposal?id=${id}`)).state.status === "expired",
          60_000,
        );
      const c = await runCurator(["propose", ...args(net, control), "--train", "12", "--json"]);
      assertEquals(c.code, 0, c.stderr);
      const expected = JSON.parse(c.stdout);
      await expire(expected.proposal);
      for (const [i, point] of PROPOSE_POINTS.entries()) {
        const home = crashed[i]!;
        const killed = await runCurator(["propose", ...args(net, home), "--train", "12", "--json"], {
          NEURO_CRASH_AT: point,
        });
        assertEquals(killed.code === 0, false, `${point} did not crash`);
        const again = await runCurator(["propose", ...args(net, home), "--train", "12", "--json"]);
        assertEquals(again.code, 0, `${point}: ${again.stderr}`);
        const p = JSON.parse(again.stdout);
        assertEquals([p.status, p.data_root, p.documents, p.windows], [
          "committed",
          expected.data_root,
          expected.documents,
          expected.windows,
        ], point);
        const subs = submissions(home);
        assertEquals([subs.length, subs[0]!.hash, subs[0]!.status], [1, p.hash, "committed"], point);
        const account = await getJson<{ nonce: number }>(`${net.rpc}/account/${p.proposer}`);
        assertEquals(account.nonce, 1, point);
        await expire(p.proposal);
      }
    } finally {
      await net.stop();
    }
  },
});
