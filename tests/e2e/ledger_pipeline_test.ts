import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { alice, bob, consSeeds, testGenesis, tx } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, prng, startProc, stopProc, until } from "./_ledger_procs.ts";

Deno.test("200 nonces of one sender sent at once, in shuffled order, are all accepted and all commit", async () => {
  const dir = await Deno.makeTempDir();
  const procs: NodeProc[] = [];
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 1));
    const proposer = await startProc(`${dir}/v0`, path, { intervalMs: 100 });
    procs.push(proposer);
    const random = prng(16);
    const order = Array.from({ length: 200 }, (_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const answers = await Promise.all(order.map(async (nonce) => {
      const res = await fetch(`${proposer.url}/broadcast_tx`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: canonical(tx(alice, "transfer", nonce, { to: bob.accountId, amount: 1 + nonce })),
      });
      return JSON.parse(await res.text()) as { hash: string; check: { ok: boolean } };
    }));
    assertEquals(answers.filter((a) => !a.check.ok), []);
    await until(
      "alice's 200 transfers to commit",
      async () =>
        (await getJson<{ nonce: number }>(`${proposer.url}/account/${alice.accountId}`)).nonce === 200,
    );
    for (const a of answers) {
      assertEquals(
        (await getJson<{ status: string }>(`${proposer.url}/tx?hash=${a.hash}`)).status,
        "committed",
      );
    }
    assertEquals(
      (await getJson<{ balance: number }>(`${proposer.url}/account/${bob.accountId}`)).balance,
      200 * 201 / 2,
    );
    assertEquals((await getJson<{ mempool: number }>(`${proposer.url}/status`)).mempool, 0);
  } finally {
    for (const p of procs) await stopProc(p);
    await Deno.remove(dir, { recursive: true });
  }
});
