import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { alice, bob, consSeeds, testGenesis, tx } from "../ledger/_fixture.ts";
import {
  committedHashes,
  getJson,
  type NodeProc,
  prepare,
  startProc,
  stopProc,
  until,
} from "./_ledger_procs.ts";

Deno.test("a replica with a different fee rule stops at the first block with a transaction and prints both hashes", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 2));
    procs.push(await startProc(`${dir}/v0`, path, { intervalMs: 50 }));
    procs.push(await startProc(`${dir}/v1`, path, { follow: procs[0]!.url }));
    const odd = await startProc(`${dir}/odd`, path, {
      follow: procs[0]!.url,
      env: { NEURO_TEST_DIVERGENT_FEE: "999" },
    });
    procs.push(odd);
    const url = procs[0]!.url;
    await until(
      "a few empty blocks",
      async () => (await getJson<{ height: number }>(`${url}/status`)).height >= 3,
    );
    const res = await fetch(`${url}/broadcast_tx`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: canonical(tx(alice, "transfer", 0, { to: bob.accountId, amount: 10 })),
    });
    const { hash } = JSON.parse(await res.text()) as { hash: string };
    await until(
      "the transfer to commit",
      async () => (await getJson<{ status: string }>(`${url}/tx?hash=${hash}`)).status === "committed",
    );
    const { height } = await getJson<{ height: number }>(`${url}/tx?hash=${hash}`);
    const code = await odd.exited;
    equal(code, 3, odd.lines.join("\n"));
    const proposerHash = (await getJson<{ app_hash: string }>(`${url}/block?height=${height}`)).app_hash;
    const halt = odd.lines.find((l) => l.startsWith("HALT"))!;
    const m = /^HALT app_hash_mismatch at height (\d+): proposer ([0-9a-f]{64}), replica ([0-9a-f]{64})/.exec(
      halt,
    );
    equal(m !== null, true, halt);
    assertEquals([Number(m![1]), m![2]], [height, proposerHash]);
    equal(m![3] !== proposerHash, true);
    // The divergent replica committed everything before that height and nothing from it on.
    const mine = committedHashes(`${dir}/odd`);
    assertEquals(mine.size, height - 1);
    const theirs = committedHashes(`${dir}/v0`);
    for (const [h, a] of mine) equal(theirs.get(h), a, `height ${h}`);
    // The honest replica agrees with the proposer at that height.
    await until(
      "the honest replica",
      async () => (await getJson<{ height: number }>(`${procs[1]!.url}/status`)).height >= height,
    );
    equal(
      (await getJson<{ app_hash: string }>(`${procs[1]!.url}/block?height=${height}`)).app_hash,
      proposerHash,
    );
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
