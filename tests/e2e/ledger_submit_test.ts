import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonicalBytes } from "../../core/canonical.ts";
import { Journal } from "../../actors/runtime/journal.ts";
import { Submitter } from "../../actors/runtime/submit.ts";
import { TransportClient } from "../../actors/runtime/transport.ts";
import { startNode } from "../../ledger/engine/node.ts";
import { alice, bob, testGenesis, tx } from "../ledger/_fixture.ts";

Deno.test("the actors' Submitter commits a transfer through the validator RPC and records a CheckTx rejection", async () => {
  const dir = await Deno.makeTempDir();
  const node = await startNode({
    home: `${dir}/node`,
    genesis: testGenesis(),
    intervalMs: 30,
    log: () => {},
  });
  const journal = Journal.open(`${dir}/journal.sqlite`);
  try {
    const submitter = new Submitter(journal, new TransportClient(node.url, null), {
      pollMs: 20,
      confirmMs: 10_000,
    });
    const raw = canonicalBytes(tx(alice, "transfer", 0, { to: bob.accountId, amount: 77 }));
    const done = await submitter.submit("pay-bob", () => raw);
    assertEquals([done.status, done.code, done.height !== null], ["committed", null, true]);
    const stale = await submitter.submit("pay-bob-again", () => raw.slice());
    // The same bytes again: already committed, so the Submitter finds them committed by their hash.
    assertEquals(stale.status, "committed");
    // A nonce past the mempool's window of held future nonces (next nonce 1 + 256) is refused outright.
    const future = canonicalBytes(tx(alice, "transfer", 1 + 256, { to: bob.accountId, amount: 1 }));
    const rejected = await submitter.submit("future", () => future);
    assertEquals([rejected.status, rejected.code], ["rejected", "future_nonce"]);
    assertEquals((node.app.query(`/account/${bob.accountId}`) as { balance: number }).balance, 77);
  } finally {
    journal.close();
    await node.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
