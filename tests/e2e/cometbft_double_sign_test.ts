/**
 * Double signing on CometBFT (NEURO_SLOW=1 only; ignored with the reason printed when CometBFT is not
 * installed): validator-3's key runs in two CometBFT processes at once (each with our app beside it). When
 * they sign conflicting votes, CometBFT's evidence reaches FinalizeBlock as `misbehavior`; the ledger burns a
 * quarter of the remaining bond (rounded up) once per piece of evidence, jails the validator and tells
 * CometBFT to drop it, which stops further evidence.
 */
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../_assert.ts";
import { installedTool } from "../../ledger/abci/cometbft_pin.ts";
import { cometHomeOf, cometRpcOf, writeCometConfigs, writeCometHomes } from "../../ledger/abci/comet_home.ts";
import { cometAddress } from "../../ledger/abci/wire_values.ts";
import { loadConsensusKeyFile, newConsensusSeed } from "../../ledger/consensus_key.ts";
import { writeSecretFile } from "../../core/secret_file.ts";
import { slashAmount } from "../../ledger/evidence.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { getJson, type NodeProc, startProc, stopProc, until } from "./_ledger_procs.ts";
import { Buffer } from "node:buffer";
import { consensusKeyFromSeed } from "../../ledger/consensus_key.ts";
import { fromHex } from "../../core/hex.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const cometbft = await installedTool(ROOT, "cometbft");
const SLOW = Deno.env.get("NEURO_SLOW") === "1";
if (!cometbft) {
  console.log("double-sign test ignored: cometbft is not installed (deno task cometbft:install)");
} else if (!SLOW) console.log("double-sign test ignored: it runs with NEURO_SLOW=1 (deno task test:slow)");

/** A second home signing with `home`'s consensus key: our keys copied, a CometBFT home with a new node key. */
async function twinOf(home: string, twin: string): Promise<void> {
  for (const f of ["consensus.key", "account.key"]) {
    await writeSecretFile(`${twin}/${f}`, (await Deno.readTextFile(`${home}/${f}`)).trim(), f);
  }
  const from = cometHomeOf(home), to = cometHomeOf(twin);
  await Deno.mkdir(`${to}/config`, { recursive: true });
  await Deno.copyFile(`${from}/config/genesis.json`, `${to}/config/genesis.json`);
  await writeSecretFile(
    `${to}/config/priv_validator_key.json`,
    (await Deno.readTextFile(`${from}/config/priv_validator_key.json`)).trim(),
    "CometBFT validator key",
  );
  await writeSecretFile(`${to}/data/priv_validator_state.json`, '{"height":"0","round":0,"step":0}', "state");
  const seed = newConsensusSeed();
  const pub = fromHex(consensusKeyFromSeed(seed).publicKey);
  const priv = Buffer.from(new Uint8Array([...fromHex(seed), ...pub])).toString("base64");
  await writeSecretFile(
    `${to}/config/node_key.json`,
    JSON.stringify({ priv_key: { type: "tendermint/PrivKeyEd25519", value: priv } }),
    "node key",
  );
}

function evidenceRecords(home: string): { consensus_key: string; burned: number }[] {
  const db = new DatabaseSync(`${home}/state.sqlite`, { readOnly: true });
  try {
    return (db.prepare("SELECT value FROM state WHERE tbl = 'evidence' ORDER BY key").all() as {
      value: string;
    }[])
      .map((r) => JSON.parse(r.value));
  } finally {
    db.close();
  }
}

Deno.test({
  name:
    "a validator whose key signs in two CometBFT processes is slashed a quarter of its bond per piece of evidence, once each, and removed",
  ignore: !cometbft || !SLOW,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "comet-double-" });
    const procs: NodeProc[] = [];
    try {
      const g = await writeDevnetGenesis({ out: dir, validators: 4, blockIntervalMs: 200 });
      await writeCometHomes(g.genesisPath, g.homes);
      const twin = `${dir}/twin-3`;
      await twinOf(g.homes[3]!, twin);
      await writeCometConfigs(g.genesisPath, [...g.homes, twin]);
      for (const home of [...g.homes, twin]) {
        procs.push(await startProc(home, g.genesisPath, { engine: "cometbft" }));
      }
      const key = (await loadConsensusKeyFile(`${g.homes[3]}/consensus.key`)).publicKey;
      const rpc = procs[0]!.url;
      const validator = async () =>
        (await getJson<
          {
            validators: { consensus_key: string; amount: number; power: number; state: { status: string } }[];
          }
        >(
          `${rpc}/validators`,
        )).validators.find((v) => v.consensus_key === key)!;
      await until(
        "the double signer to be jailed",
        async () => (await validator()).state.status === "jailed",
        240_000,
      );
      const jailedAt = (await getJson<{ height: number }>(`${rpc}/status`)).height;
      await stopProc(procs.pop()!); // the twin
      // CometBFT drops the validator two blocks after the jail; then no new evidence can name it.
      const comet = await cometRpcOf(g.homes[0]!);
      await until("CometBFT to drop the validator", async () => {
        const h = (await getJson<{ height: number }>(`${rpc}/status`)).height;
        if (h < jailedAt + 4) return false;
        const set = await getJson<{ result: { validators: { address: string }[] } }>(
          `${comet}/validators?height=${h}`,
        );
        return !set.result.validators.some((v) => v.address === cometAddress(key));
      }, 60_000);
      const records = evidenceRecords(g.homes[0]!).filter((r) => r.consensus_key === key);
      let remaining = 1_000_000;
      const expected = records.map(() => {
        const burn = slashAmount(remaining);
        remaining -= burn;
        return burn;
      });
      assertEquals(records.length >= 1, true);
      assertEquals(records.map((r) => r.burned), expected);
      assertEquals(expected[0], 250_000);
      const v = await validator();
      assertEquals([v.amount, v.power, v.state.status], [remaining, 0, "jailed"]);
      // Every validator applied the same evidence: identical records and app hashes.
      for (const home of g.homes.slice(1)) assertEquals(evidenceRecords(home), evidenceRecords(g.homes[0]!));
    } finally {
      await Promise.all(procs.map((p) => stopProc(p)));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
