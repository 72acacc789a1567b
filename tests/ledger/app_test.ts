import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { canonicalBytes } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { alice, bob, nextBlock, snapshot, testApp, tx } from "./_fixture.ts";

Deno.test("a signature verified by checkTx is not verified again by finalizeBlock (cache by raw hash)", () => {
  const app = testApp();
  const t = tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 });
  app.checkTx(canonicalBytes(t), app.projection(), 0);
  assertEquals(app.verifications, 1);
  app.finalizeBlock(nextBlock(app, [t]));
  app.commit();
  assertEquals(app.verifications, 1);
  // An envelope never checked is verified once when its block is applied.
  const u = tx(alice, "transfer", 1, { to: bob.accountId, amount: 1 });
  app.finalizeBlock(nextBlock(app, [u]));
  assertEquals(app.verifications, 2);
  app.close();
});

Deno.test("finalizeBlock applies without persisting: the store is unchanged until commit", () => {
  const app = testApp();
  const before = snapshot(app);
  const r = app.finalizeBlock(nextBlock(app, [tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 })]));
  assertEquals(snapshot(app), before);
  assertEquals(app.info().height, 0);
  const head = app.commit();
  assertEquals([head.height, head.app_hash], [1, r.app_hash]);
  assertEquals(app.store.tx(r.tx_hashes[0]!), { height: 1, index: 0, result: { ok: true } });
  app.close();
});

Deno.test("processProposal refuses a block with a wrong height, previous hash, earlier time or an extra field", () => {
  const app = testApp();
  const good = nextBlock(app, []);
  const code = (b: unknown) => {
    const r = app.processProposal(b);
    return r.ok ? "ok" : r.message;
  };
  assertEquals(code(good), "ok");
  assertEquals(code({ ...good, height: 2 }), "Cannot accept block 1: height is 2, expected 1");
  assertEquals(
    code({ ...good, prev_app_hash: "00".repeat(32) }).startsWith(
      "Cannot accept block 1: prev_app_hash is 00",
    ),
    true,
  );
  assertEquals(
    code({ ...good, time: good.time - 2000 }),
    `Cannot accept block 1: time is ${good.time - 2000}, before ${good.time - 1000}`,
  );
  assertEquals(
    code({ ...good, extra: 1 }),
    "Cannot accept block 1: expected exactly chain_id, height, time, prev_app_hash, last_commit, txs",
  );
  throws(() => app.finalizeBlock({ ...good, height: 2 }), ProtocolError);
  assertEquals(app.info().height, 0);
  app.close();
});

Deno.test("a block over max_block_bytes is refused", () => {
  const app = testApp({}, {}, { max_block_bytes: 2_000 });
  const txs = [0, 1, 2, 3, 4].map((n) => tx(alice, "transfer", n, { to: bob.accountId, amount: 1 }));
  const r = app.processProposal(nextBlock(app, txs));
  assertEquals(
    r.ok ? "" : r.message.replace(/\d+ bytes/, "N bytes"),
    "Cannot accept block 1: size is N bytes, bound is 2000",
  );
  // prepareProposal keeps the block under the bound.
  const picked = app.prepareProposal(txs.map((t) => canonicalBytes(t)), 200);
  assertEquals(picked.length < 5 && picked.length > 0, true);
  assertEquals(app.processProposal(nextBlock(app, picked)).ok, true);
  app.close();
});

Deno.test("a transaction over 2 MiB inside a block fails with too_large and changes nothing", () => {
  const app = testApp({}, {}, { max_block_bytes: 8 * 1024 * 1024 });
  const big = tx(alice, "transfer", 0, { to: bob.accountId, amount: 1, memo: "x".repeat(2 * 1024 * 1024) });
  const before = snapshot(app);
  const r = app.finalizeBlock(nextBlock(app, [big]));
  app.commit();
  assertEquals(r.results.map((x) => (x.ok ? "ok" : x.code)), ["too_large"]);
  assertEquals(snapshot(app), before);
  app.close();
});
