/**
 * Committed signed transfers per second on four validators: the embedded engine (one proposer, three replicas)
 * against CometBFT (four `validator --engine cometbft` processes), in one run and on one machine. Each
 * iteration broadcasts 400 transfers from 40 senders through validator-0's RPC and waits until every one is
 * committed. The CometBFT row is left out (with a line saying why) when CometBFT is not installed.
 *
 * Run: `deno bench -A bench/cometbft_bench.ts`.
 */
import { canonical } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { type AccountKey, keyFromSeed } from "../ledger/keys.ts";
import { signBody } from "../ledger/envelope.ts";
import { installedTool } from "../ledger/abci/cometbft_pin.ts";
import { writeCometHomes } from "../ledger/abci/comet_home.ts";
import { writeDevnetGenesis } from "../genesis/ledger_devnet.ts";
import { getJson, type NodeProc, startProc } from "../tests/e2e/_ledger_procs.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const SENDERS = 40;
const TRANSFERS = 400;
const keys: AccountKey[] = Array.from(
  { length: SENDERS },
  (_, i) => keyFromSeed(sha256Hex(new TextEncoder().encode(`comet-bench-${i}`))),
);
const sink = keyFromSeed("5f".repeat(32)).accountId;
const procs: NodeProc[] = [];
globalThis.addEventListener("unload", () => {
  for (const p of procs) {
    try {
      p.child.kill("SIGTERM");
    } catch {
      // gone
    }
  }
});

/** Starts four validators of `engine` on a fresh genesis; returns validator-0's RPC URL. */
async function network(engine: "embedded" | "cometbft"): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: `bench-${engine}-` });
  const g = await writeDevnetGenesis({
    out: dir,
    validators: 4,
    blockIntervalMs: 200,
    accounts: keys.map((k) => ({ id: k.accountId, balance: 1_000_000_000_000 })),
  });
  if (engine === "cometbft") {
    await writeCometHomes(g.genesisPath, g.homes);
    for (const home of g.homes) procs.push(await startProc(home, g.genesisPath, { engine: "cometbft" }));
    return procs.at(-4)!.url;
  }
  const v0 = await startProc(g.homes[0]!, g.genesisPath, { intervalMs: 200 });
  procs.push(v0);
  for (const home of g.homes.slice(1)) procs.push(await startProc(home, g.genesisPath, { follow: v0.url }));
  return v0.url;
}

/** Broadcasts `TRANSFERS` transfers (senders in parallel, each in nonce order) and waits for all commits. */
async function commitTransfers(url: string, nonces: number[], chain: string): Promise<void> {
  const hashes: string[] = [];
  await Promise.all(keys.map(async (key, s) => {
    for (let i = 0; i < TRANSFERS / SENDERS; i++) {
      const env = signBody(
        { kind: "transfer", chain_id: chain, nonce: nonces[s]!++, to: sink, amount: 1 },
        key,
      );
      const res = await fetch(`${url}/broadcast_tx`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: canonical(env),
      });
      const answer = await res.json() as { hash: string; check: { ok: boolean; message?: string } };
      if (!answer.check.ok) throw new Error(`broadcast refused: ${answer.check.message}`);
      hashes.push(answer.hash);
    }
  }));
  for (const hash of hashes) {
    for (;;) {
      const t = await getJson<{ status: string }>(`${url}/tx?hash=${hash}`);
      if (t.status === "committed") break;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

const cometbft = await installedTool(ROOT, "cometbft");
if (!cometbft) {
  console.log("the CometBFT row is left out: cometbft is not installed (deno task cometbft:install)");
}
const engines = cometbft ? (["embedded", "cometbft"] as const) : (["embedded"] as const);
for (const engine of engines) {
  const url = await network(engine);
  const chain = (await getJson<{ chain_id: string }>(`${url}/status`)).chain_id;
  const nonces = keys.map(() => 0);
  Deno.bench({
    name: `${TRANSFERS} signed transfers committed on 4 ${engine} validators`,
    group: "committed transfers, 4 validators",
    baseline: engine === "embedded",
    n: 3,
    warmup: 1,
    async fn(b) {
      b.start();
      await commitTransfers(url, nonces, chain);
      b.end();
    },
  });
}
