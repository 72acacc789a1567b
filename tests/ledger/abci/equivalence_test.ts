import { assertEquals } from "../../_assert.ts";
import { canonicalBytes } from "../../../core/canonical.ts";
import { toHex } from "../../../core/hex.ts";
import { alice, attest, bob, bondTx, cons, nextBlock, owners, T0, testApp, tx } from "../_fixture.ts";
import { AbciTestClient } from "./_client.ts";
import { finalizeBlock, initChain, serve } from "./_abci_fixture.ts";
import type { Envelope } from "../../../ledger/envelope.ts";

/** Transactions and committers per height (1-based): transfers, a bond that activates, an unbond. */
function plan(): { txs: Envelope[]; committers: number[]; absent: number[] }[] {
  const blocks: { txs: Envelope[]; committers: number[]; absent: number[] }[] = [];
  let aliceNonce = 0;
  for (let h = 1; h <= 12; h++) {
    const txs: Envelope[] = [tx(alice, "transfer", aliceNonce++, { to: bob.accountId, amount: 1000 + h })];
    if (h === 2) txs.push(bondTx(owners[0]!, cons[2]!, 500_000, 0));
    if (h === 7) txs.push(tx(owners[0]!, "unbond", 1, { consensus_key: cons[2]!.publicKey }));
    if (h === 8) txs.push(tx(alice, "transfer", 99, { to: bob.accountId, amount: 1 })); // fails: future nonce
    const committers = h === 1 ? [] : h % 3 === 0 ? [0] : h >= 6 && h <= 9 ? [0, 1, 2] : [0, 1];
    blocks.push({ txs, committers, absent: h > 1 && h % 3 === 0 ? [1] : [] });
  }
  return blocks;
}

Deno.test("the same blocks through the embedded path and through the ABCI adapter give identical app hashes at every height", async () => {
  const embedded = testApp();
  const served = await serve(testApp());
  const client = await AbciTestClient.connect(served.server.proxyApp);
  try {
    const init = await client.call(initChain(embedded.genesisId));
    if (init?.case !== "initChain") throw new Error(`expected initChain, got ${init?.case}`);
    assertEquals(toHex(init.value.appHash), embedded.info().app_hash);
    assertEquals(
      init.value.validators.map((v) => [toHex(v.pubKey!.sum.value!), v.power]).sort(),
      [
        [cons[0]!.publicKey, 4n],
        [cons[1]!.publicKey, 4n],
      ].sort(),
    );
    const updates: [number, string, bigint][] = [];
    const embeddedChanges: [number, string, number][] = [];
    for (const [i, b] of plan().entries()) {
      const height = i + 1;
      const time = T0 + height * 1000;
      const keys = b.committers.map((c) => cons[c]!);
      const r = embedded.finalizeBlock(nextBlock(embedded, b.txs, attest(embedded, keys), time));
      embedded.commit();
      for (const c of r.power_changes) embeddedChanges.push([height, c.consensus_key, c.power]);
      const f = await client.call(
        finalizeBlock(
          height,
          time,
          b.txs.map((t) => canonicalBytes(t)),
          keys.map((k) => k.publicKey),
          b.absent.map((a) => cons[a]!.publicKey),
        ),
      );
      if (f?.case !== "finalizeBlock") throw new Error(`expected finalizeBlock, got ${f?.case}`);
      assertEquals(toHex(f.value.appHash), r.app_hash, `app hash at height ${height}`);
      assertEquals(
        f.value.txResults.map((t) => t.code === 0 ? "ok" : t.log),
        r.results.map((x) => x.ok ? "ok" : x.message),
        `results at height ${height}`,
      );
      for (const u of f.value.validatorUpdates) updates.push([height, toHex(u.pubKey!.sum.value!), u.power]);
      const c = await client.call({ case: "commit", value: {} });
      assertEquals(c?.case, "commit");
      const info = await client.call({ case: "info", value: {} });
      if (info?.case !== "info") throw new Error("expected info");
      assertEquals([info.value.lastBlockHeight, toHex(info.value.lastBlockAppHash)], [
        BigInt(height),
        r.app_hash,
      ]);
    }
    // The bond (height 2) activates at the epoch boundary 5 with power 2; the unbond (height 7) removes it at 10.
    assertEquals(embeddedChanges, [[5, cons[2]!.publicKey, 2], [10, cons[2]!.publicKey, 0]]);
    assertEquals(updates, [[5, cons[2]!.publicKey, 2n], [10, cons[2]!.publicKey, 0n]]);
  } finally {
    client.close();
    embedded.close();
    await served.close();
  }
});
