/**
 * Four CometBFT validators on loopback, each `deno task validator --engine cometbft` as a real process (our
 * app on its ABCI socket and its own `cometbft`), real SQLite and HTTP. Ignored with the reason printed when
 * CometBFT is not installed (`deno task cometbft:install`). The default run: transfers settle through our
 * RPC in front of CometBFT, one validator SIGKILLed keeps the chain live and, restarted, catches up through
 * the ABCI handshake to the same app hashes. With NEURO_SLOW=1 also: two killed stop the chain and nothing
 * is committed until one returns.
 */
import { assertEquals } from "../_assert.ts";
import { canonical } from "../../core/canonical.ts";
import { installedTool } from "../../ledger/abci/cometbft_pin.ts";
import { cometHomeOf, writeCometHomes } from "../../ledger/abci/comet_home.ts";
import { signBody } from "../../ledger/envelope.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { committedHashes, getJson, type NodeProc, startProc, stopProc, until } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const cometbft = await installedTool(ROOT, "cometbft");
if (!cometbft) {
  console.log("cometbft network test ignored: cometbft is not installed (deno task cometbft:install)");
}
const SLOW = Deno.env.get("NEURO_SLOW") === "1";

const height = async (p: NodeProc) => (await getJson<{ height: number }>(`${p.url}/status`)).height;

/** Every height committed by all of `homes` has one app hash. */
function assertHashesAgree(homes: string[]): number {
  const maps = homes.map((h) => committedHashes(h));
  const top = Math.min(...maps.map((m) => Math.max(...m.keys())));
  for (let h = 1; h <= top; h++) {
    const hashes = new Set(maps.map((m) => m.get(h)));
    assertEquals(hashes.size, 1, `height ${h}: ${[...hashes].join(" ")}`);
  }
  return top;
}

Deno.test({
  name:
    "four CometBFT validators settle transfers; one SIGKILLed keeps the chain live and rejoins with the same app hashes",
  ignore: !cometbft,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "comet-e2e-" });
    const procs: (NodeProc | null)[] = [];
    try {
      const g = await writeDevnetGenesis({ out: dir, validators: 4, blockIntervalMs: 200 });
      await writeCometHomes(g.genesisPath, g.homes);
      for (const home of g.homes) procs.push(await startProc(home, g.genesisPath, { engine: "cometbft" }));
      const live = () => procs.filter((p): p is NodeProc => p !== null);
      const faucet = await loadKeyFile(g.faucet);
      const chain = (await getJson<{ chain_id: string }>(`${procs[0]!.url}/status`)).chain_id;
      const to = (await loadKeyFile(`${g.homes[1]}/account.key`)).accountId;
      let nonce = 0;
      const transfer = async (via: NodeProc, amount: number) => {
        const envelope = signBody({ kind: "transfer", chain_id: chain, nonce: nonce++, to, amount }, faucet);
        const res = await fetch(`${via.url}/broadcast_tx`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: canonical(envelope),
        });
        const answer = await res.json() as { hash: string; check: { ok: boolean } };
        assertEquals(answer.check, { ok: true });
        await until(
          "the transfer to commit",
          async () =>
            (await getJson<{ status: string }>(`${via.url}/tx?hash=${answer.hash}`)).status === "committed",
          60_000,
        );
        return (await getJson<{ height: number; result: unknown }>(`${via.url}/tx?hash=${answer.hash}`));
      };
      const first = await transfer(procs[2]!, 1_000_000);
      assertEquals(first.result, { ok: true });
      const balance = async (p: NodeProc) =>
        (await getJson<{ balance: number }>(`${p.url}/account/${to}`)).balance;
      await until("every node to reach the transfer", async () => {
        for (const p of live()) if ((await height(p)) < first.height) return false;
        return true;
      }, 60_000);
      for (const p of live()) assertEquals(await balance(p), 11_000_000);

      // One validator killed: 12 of 16 power remain (> 2/3), so blocks keep coming.
      const victim = procs[3]!;
      victim.child.kill("SIGKILL");
      await victim.exited;
      procs[3] = null;
      const before = await height(procs[0]!);
      await until(
        "three validators to commit 3 more blocks",
        async () => (await height(procs[0]!)) >= before + 3,
        60_000,
      );
      const second = await transfer(procs[0]!, 500_000);
      assertEquals(second.result, { ok: true });

      procs[3] = await startProc(g.homes[3]!, g.genesisPath, { engine: "cometbft" });
      const target = await height(procs[0]!);
      await until(
        "the restarted validator to catch up",
        async () => (await height(procs[3]!)) >= target,
        90_000,
      );
      assertEquals(await balance(procs[3]!), 11_500_000);
      assertEquals(assertHashesAgree(g.homes) >= target, true);

      if (SLOW) {
        // Two killed: 8 of 16 power is not more than 2/3, so nothing is committed until one returns.
        for (const i of [2, 3]) {
          procs[i]!.child.kill("SIGKILL");
          await procs[i]!.exited;
          procs[i] = null;
        }
        await new Promise((r) => setTimeout(r, 2_000)); // a block already being committed may finish
        const stalled = await height(procs[0]!);
        await new Promise((r) => setTimeout(r, 5_000));
        assertEquals([await height(procs[0]!), await height(procs[1]!)], [stalled, stalled]);
        procs[2] = await startProc(g.homes[2]!, g.genesisPath, { engine: "cometbft" });
        await until("the chain to resume", async () => (await height(procs[0]!)) > stalled + 1, 90_000);
        assertHashesAgree([g.homes[0]!, g.homes[1]!, g.homes[2]!]);
      }
    } catch (e) {
      // what each validator (and its CometBFT) said: a node that exited or stopped answering shows why
      for (const [i, p] of procs.entries()) {
        if (p === null) continue;
        const comet = await Deno.readTextFile(`${cometHomeOf(p.home)}/cometbft.log`).catch(() => "");
        console.error(`validator ${i} (${p.url}) said:\n${p.lines.slice(-40).join("\n")}`);
        console.error(`its cometbft.log ends:\n${comet.split("\n").slice(-15).join("\n")}`);
      }
      throw e;
    } finally {
      await Promise.all(procs.filter((p): p is NodeProc => p !== null).map((p) => stopProc(p)));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
