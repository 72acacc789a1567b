import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { parseJson } from "../../core/canonical.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { committedHashes, getJson, type NodeProc, startProc, stopProc, until } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function task(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), { args: ["run", "--allow-all", ...args], cwd: ROOT })
    .output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

Deno.test("genesis devnet plus four validator processes (one proposer, three replicas) agree on every block; transfer and status tasks work", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const built = await task(["tasks/genesis.ts", "devnet", "--out", dir, "--block-interval-ms", "100"]);
    equal(built.code, 0, built.err);
    const path = `${dir}/genesis.json`;
    procs.push(await startProc(`${dir}/validator-0`, path));
    for (let i = 1; i < 4; i++) {
      procs.push(await startProc(`${dir}/validator-${i}`, path, { follow: procs[0]!.url }));
    }
    const to = (await loadKeyFile(`${dir}/validator-3/account.key`)).accountId;
    const sent = await task([
      "tasks/transfer.ts",
      "--key",
      `${dir}/faucet/account.key`,
      "--to",
      to,
      "--amount",
      "2500000",
      "--rpc",
      procs[2]!.url,
    ]);
    equal(sent.code, 0, sent.err);
    equal(/committed at height \d+/.test(sent.out), true, sent.out);
    const at = Number(/committed at height (\d+)/.exec(sent.out)![1]);
    // The transfer was confirmed by validator-2; validator-3 may be a block behind it.
    await until(
      "validator-3 to reach the transfer's height",
      async () => (await getJson<{ height: number }>(`${procs[3]!.url}/status`)).height >= at,
    );
    const status = await task(["tasks/status.ts", "--rpc", procs[3]!.url, "--account", to]);
    equal(status.code, 0, status.err);
    const account = parseJson(status.out.trim()) as { balance: number };
    equal(account.balance, 10_000_000 + 2_500_000);
    // Wait for a block that carries all four attestations of its predecessor.
    const url = procs[0]!.url;
    let full = 0;
    await until("a block with four attestations", async () => {
      const { height } = await getJson<{ height: number }>(`${url}/status`);
      const b = await getJson<{ block: { last_commit: unknown[] } }>(`${url}/block?height=${height}`);
      if (b.block.last_commit.length === 4) full = height;
      return full > 0;
    });
    const target = full + 2;
    await until("every node at the target", async () => {
      const hs = await Promise.all(procs.map((p) => getJson<{ height: number }>(`${p.url}/status`)));
      return hs.every((h) => h.height >= target);
    });
    for (const p of procs) await stopProc(p);
    const maps = procs.map((p) => committedHashes(p.home));
    for (let h = 1; h <= target; h++) assertEquals(new Set(maps.map((m) => m.get(h))).size, 1, `height ${h}`);
    const bad = await task([
      "tasks/transfer.ts",
      "--key",
      `${dir}/faucet/account.key`,
      "--to",
      to,
      "--amount",
      "1.5",
    ]);
    assertEquals([bad.code, bad.err.split("\n")[0]], [
      2,
      "error: --amount is 1.5, expected a positive integer of atoms",
    ]);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
