/**
 * Bonding a fifth validator on four CometBFT validators with `deno task validator bond` (NEURO_SLOW=1 only;
 * ignored with the reason printed when CometBFT is not installed): CometBFT adds it with power
 * bond / bond_unit from height activation_height + 2 (PROTOCOL §14), it then commits blocks; `unbond` removes
 * it from leave_height + 2; `withdraw` before the evidence windows is refused (withdraw_too_early), after
 * them it pays the bond back.
 */
import { assertEquals } from "../_assert.ts";
import { installedTool } from "../../ledger/abci/cometbft_pin.ts";
import { cometAddress } from "../../ledger/abci/wire_values.ts";
import { cometRpcOf, writeCometHomes } from "../../ledger/abci/comet_home.ts";
import { loadConsensusKeyFile } from "../../ledger/consensus_key.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { getJson, type NodeProc, startProc, stopProc, until } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const cometbft = await installedTool(ROOT, "cometbft");
const SLOW = Deno.env.get("NEURO_SLOW") === "1";
if (!cometbft) {
  console.log("cometbft bond test ignored: cometbft is not installed (deno task cometbft:install)");
} else if (!SLOW) console.log("cometbft bond test ignored: it runs with NEURO_SLOW=1 (deno task test:slow)");

async function op(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}tasks/validator.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const d = new TextDecoder();
  return { code: o.code, out: d.decode(o.stdout).trim(), err: d.decode(o.stderr).trim() };
}

/** CometBFT's validator set at `height`: address → voting power. */
async function cometSet(rpc: string, height: number): Promise<Map<string, number>> {
  const r = await getJson<{ result?: { validators: { address: string; voting_power: string }[] } }>(
    `${rpc}/validators?height=${height}&per_page=100`,
  );
  return new Map((r.result?.validators ?? []).map((v) => [v.address, Number(v.voting_power)]));
}

Deno.test({
  name:
    "validator bond adds a fifth CometBFT validator at the documented height; unbond removes it; withdraw waits for the evidence windows",
  ignore: !cometbft || !SLOW,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "comet-bond-" });
    const procs: NodeProc[] = [];
    try {
      const g = await writeDevnetGenesis({ out: dir, validators: 4, spares: 1, blockIntervalMs: 200 });
      await writeCometHomes(g.genesisPath, g.homes);
      for (const home of g.homes) procs.push(await startProc(home, g.genesisPath, { engine: "cometbft" }));
      const fifth = g.homes[4]!;
      const key = (await loadConsensusKeyFile(`${fifth}/consensus.key`)).publicKey;
      const owner = (await loadKeyFile(`${fifth}/account.key`)).accountId;
      const rpc = procs[0]!.url;
      const comet = await cometRpcOf(g.homes[0]!);
      const address = cometAddress(key);
      const validator = async () =>
        (await getJson<
          {
            validators: {
              consensus_key: string;
              power: number;
              state: { status: string };
              change: unknown;
            }[];
          }
        >(
          `${rpc}/validators`,
        )).validators.find((v) => v.consensus_key === key);

      const bond = await op("bond", "--home", fifth, "--rpc", rpc, "--amount", "500000");
      assertEquals(bond.code, 0, bond.err);
      const pending = await validator();
      const activation = (pending!.change as { height: number }).height;
      assertEquals([pending!.state.status, pending!.change], ["pending", {
        change: "activate",
        height: activation,
        power: 2,
      }]);
      // Running the same command again returns the journaled outcome; nothing new is signed.
      const again = await op("bond", "--home", fifth, "--rpc", rpc, "--amount", "500000");
      assertEquals(again.out, bond.out);

      await until(
        "CometBFT to use the new validator",
        async () => (await cometSet(comet, activation + 2)).size > 0,
        120_000,
      );
      assertEquals((await cometSet(comet, activation + 1)).has(address), false);
      assertEquals((await cometSet(comet, activation + 2)).get(address), 2);
      assertEquals((await validator())!.power, 2);
      await until("the fifth validator to commit a block", async () => {
        const h = (await getJson<{ height: number }>(`${rpc}/status`)).height;
        const b = await getJson<{ block: { committers: string[] } }>(`${rpc}/block?height=${h}`);
        return b.block.committers.includes(key);
      }, 60_000);

      assertEquals((await op("unbond", "--home", fifth, "--rpc", rpc)).code, 0);
      const leaving = await validator();
      const leave = (leaving!.change as { height: number }).height;
      assertEquals([leaving!.state.status, leaving!.change], ["leaving", {
        change: "remove",
        height: leave,
      }]);
      const early = await op("withdraw", "--home", fifth, "--rpc", rpc);
      assertEquals([early.code, early.err.endsWith("(withdraw_too_early)")], [1, true], early.err);
      await until(
        "CometBFT to drop the validator",
        async () => (await cometSet(comet, leave + 2)).size > 0,
        120_000,
      );
      assertEquals((await cometSet(comet, leave + 1)).get(address), 2);
      assertEquals((await cometSet(comet, leave + 2)).has(address), false);
      const cooldown = await validator();
      const windows = cooldown!.change as { height: number; time: number };
      assertEquals(cooldown!.state.status, "cooldown");
      const balance = async () => (await getJson<{ balance: number }>(`${rpc}/account/${owner}`)).balance;
      await until("the evidence windows to pass", async () => {
        const s = await getJson<{ height: number; time: number }>(`${rpc}/status`);
        return s.height >= windows.height && s.time >= windows.time;
      }, 120_000);
      const before = await balance();
      const paid = await op("withdraw", "--home", fifth, "--rpc", rpc);
      assertEquals(paid.code, 0, paid.err);
      assertEquals((await balance()) - before, 500_000 - 1_000); // the bond back, less the fee
      assertEquals((await validator())!.state.status, "withdrawn");
    } finally {
      await Promise.all(procs.map((p) => stopProc(p)));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
