import { assertEquals } from "../_assert.ts";
import { fromHex, toHex } from "../../core/hex.ts";
import { cometAddress } from "../../ledger/abci/wire_values.ts";
import { MisbehaviorType } from "../../ledger/abci/gen/tendermint/abci/types_pb.ts";
import { slashAmount } from "../../ledger/evidence.ts";
import { AbciTestClient } from "./abci/_client.ts";
import { finalizeBlock, initChain, serve, timestamp } from "./abci/_abci_fixture.ts";
import { cons, T0, testApp } from "./_fixture.ts";

Deno.test("a slash is a quarter of the remaining bond, rounded up", () => {
  assertEquals([slashAmount(1_000_000), slashAmount(750_000), slashAmount(5), slashAmount(0)], [
    250_000,
    187_500,
    2,
    0,
  ]);
});

Deno.test("CometBFT's duplicate-vote evidence burns a quarter of the bond once per piece, jails and removes the validator", async () => {
  const app = testApp();
  const served = await serve(app);
  const c = await AbciTestClient.connect(served.server.proxyApp);
  const key = cons[1]!.publicKey;
  const misbehavior = (height: number) => ({
    type: MisbehaviorType.DUPLICATE_VOTE,
    validator: { address: fromHex(cometAddress(key).toLowerCase()), power: 4n },
    height: BigInt(height),
    time: timestamp(T0 + height * 1000),
    totalVotingPower: 8n,
  });
  const block = async (height: number, evidence: ReturnType<typeof misbehavior>[]) => {
    const r = await c.call(finalizeBlock(height, T0 + height * 1000, [], [cons[0]!.publicKey], [], evidence));
    await c.call({ case: "commit", value: {} });
    if (r?.case !== "finalizeBlock") throw new Error(`expected finalizeBlock, got ${r?.case}`);
    return r.value.validatorUpdates.map((u) => [toHex(u.pubKey!.sum.value!), u.power]);
  };
  try {
    await c.call(initChain(app.genesisId));
    const burnedBefore = app.store.get("totals", "supply") as { burned: number };
    assertEquals(await block(1, []), []);
    assertEquals(await block(2, [misbehavior(1)]), [[key, 0n]]);
    const v = app.store.get("validator", key) as { amount: number; state: { status: string } };
    assertEquals([v.amount, v.state.status], [750_000, "jailed"]);
    // The same piece again (CometBFT re-delivering it) changes nothing; a second piece burns a quarter of the rest.
    const hashBefore = app.info().app_hash;
    assertEquals(await block(3, [misbehavior(1)]), []);
    assertEquals((app.store.get("validator", key) as { amount: number }).amount, 750_000);
    assertEquals(app.info().app_hash !== hashBefore, true); // a new block, but no new write beyond the head
    assertEquals(await block(4, [misbehavior(2)]), []);
    assertEquals((app.store.get("validator", key) as { amount: number }).amount, 562_500);
    const totals = app.store.get("totals", "supply") as { burned: number };
    assertEquals(totals.burned - burnedBefore.burned, 250_000 + 187_500);
    const q = app.query("/validators") as { validators: { consensus_key: string; power: number }[] };
    assertEquals(q.validators.find((x) => x.consensus_key === key)?.power, 0);
  } finally {
    c.close();
    await served.close();
  }
});
