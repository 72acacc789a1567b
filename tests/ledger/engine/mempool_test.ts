import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonicalBytes } from "../../../core/canonical.ts";
import { Mempool } from "../../../ledger/engine/mempool.ts";
import { MempoolStore } from "../../../ledger/engine/mempool_store.ts";
import { rawHash } from "../../../ledger/envelope.ts";
import { alice, bob, run, testApp, tx } from "../_fixture.ts";

const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);

Deno.test("the mempool admits against projected state, admits the same bytes once, and re-checks after a commit", () => {
  const app = testApp();
  const pool = new Mempool(app, { limits: { maxTxs: 3 } });
  const t0 = tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 });
  const t1 = tx(alice, "transfer", 1, { to: bob.accountId, amount: 1 });
  const spend = tx(alice, "transfer", 2, { to: bob.accountId, amount: 9_996_000 }); // all that is left after fees
  const over = tx(alice, "transfer", 3, { to: bob.accountId, amount: 1 });
  assertEquals([t0, t1, t0, spend, over].map((t) => code(pool.add(canonicalBytes(t), 0))), [
    "ok",
    "ok",
    "ok",
    "ok",
    "mempool_full",
  ]);
  assertEquals(pool.size, 3);
  // A block commits only t0; t1 and spend stay valid and pending.
  const r = run(app, [t0]);
  pool.afterCommit(r.tx_hashes, 0);
  assertEquals(pool.size, 2);
  // A block elsewhere spends alice's money with nonce 1 differently: the pending t1 and spend are dropped.
  const r2 = run(app, [tx(alice, "transfer", 1, { to: bob.accountId, amount: 2_000 })]);
  pool.afterCommit(r2.tx_hashes, 0);
  assertEquals(pool.size, 0);
  app.close();
});

const raw = (n: number, amount = 1) =>
  canonicalBytes(tx(alice, "transfer", n, { to: bob.accountId, amount }));

Deno.test("nonces sent out of order are held and join the pool in nonce order when the gap closes", () => {
  const app = testApp();
  const pool = new Mempool(app);
  // Each is answered held (it commits only once nonce 0 arrives), a re-delivery too.
  assertEquals(
    [3, 1, 2, 3].map((n) => pool.add(raw(n), 0)),
    [3, 1, 2, 3].map((n) => ({
      ok: true,
      hash: rawHash(raw(n)),
      held: true,
    })),
  );
  assertEquals([pool.size, pool.held, pool.candidates().length], [3, 3, 0]);
  assertEquals(pool.add(raw(0), 0), { ok: true, hash: rawHash(raw(0)) });
  assertEquals(pool.add(raw(3), 0), { ok: true, hash: rawHash(raw(3)) }, "promoted: no longer held");
  assertEquals([pool.size, pool.held], [4, 0]);
  assertEquals(pool.candidates(), [0, 1, 2, 3].map((n) => raw(n)));
  const r = run(app, [0, 1, 2, 3].map((n) => tx(alice, "transfer", n, { to: bob.accountId, amount: 1 })));
  assertEquals(r.results, [{ ok: true }, { ok: true }, { ok: true }, { ok: true }]);
  pool.afterCommit(r.tx_hashes, 0);
  assertEquals(pool.size, 0);
  app.close();
});

Deno.test("a future nonce past the window, a second body for a held nonce and an unfunded sender are refused and the pool is unchanged", () => {
  const app = testApp();
  const pool = new Mempool(app, { limits: { futureWindow: 4 } });
  assertEquals(code(pool.add(raw(2), 0)), "ok");
  const before = [pool.size, pool.bytes];
  const r = pool.add(raw(4), 0);
  assertEquals([r.ok, r.ok ? "" : r.message], [
    false,
    "Cannot hold transaction: nonce is 4, expected below 4",
  ]);
  assertEquals(code(pool.add(raw(2, 7), 0)), "future_nonce");
  const stranger = canonicalBytes(tx(bob, "transfer", 1, { to: alice.accountId, amount: 1 }));
  assertEquals(code(pool.add(stranger, 0)), "insufficient_funds");
  assertEquals([pool.size, pool.bytes], before);
  app.close();
});

Deno.test("the pool is bounded per sender and by bytes: mempool_full keeps nothing", () => {
  const app = testApp();
  const pool = new Mempool(app, { limits: { maxPerSender: 2 } });
  assertEquals([0, 1, 2].map((n) => code(pool.add(raw(n), 0))), ["ok", "ok", "mempool_full"]);
  assertEquals(pool.size, 2);
  const small = new Mempool(testApp(), { limits: { maxBytes: raw(0).length * 2 } });
  assertEquals([0, 1, 2].map((n) => code(small.add(raw(n), 0))), ["ok", "ok", "mempool_full"]);
  assertEquals(small.bytes, raw(0).length + raw(1).length);
  app.close();
});

Deno.test("a held transaction still waiting after the time bound is dropped at the next commit", () => {
  const app = testApp();
  const pool = new Mempool(app, { limits: { futureTtlMs: 1_000 } });
  assertEquals(code(pool.add(raw(1), 0)), "ok");
  pool.afterCommit(run(app, []).tx_hashes, 1_000);
  assertEquals(pool.held, 1);
  pool.afterCommit(run(app, []).tx_hashes, 1_001);
  assertEquals([pool.size, pool.has(rawHash(raw(1)))], [0, false]);
  app.close();
});

Deno.test("a new pool re-admits its journal, re-checked against the state: committed and stale rows are dropped", () => {
  const app = testApp();
  const store = MempoolStore.open(":memory:");
  const pool = new Mempool(app, { store });
  for (const n of [0, 1, 3]) pool.add(raw(n), 0);
  assertEquals(store.rows().map((r) => r.hash), [0, 1, 3].map((n) => rawHash(raw(n))));
  // The block with nonce 0 commits, but the process dies before the pool forgets it.
  run(app, [tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 })]);
  const again = new Mempool(app, { store });
  assertEquals([again.size, again.held, again.candidates()], [2, 1, [raw(1)]]);
  assertEquals(store.rows().map((r) => r.hash), [1, 3].map((n) => rawHash(raw(n))));
  assertEquals(code(again.add(raw(2), 0)), "ok");
  assertEquals(again.candidates(), [raw(1), raw(2), raw(3)]);
  app.close();
});

Deno.test("only admitted envelopes stay in the signature cache, and committing forgets them", () => {
  const app = testApp();
  const pool = new Mempool(app);
  const bad = canonicalBytes(
    tx(alice, "transfer", 0, { to: bob.accountId, amount: 1, extra: "x".repeat(1000) }),
  );
  assertEquals(code(pool.add(bad, 0)), "invalid_body");
  assertEquals(app.signatureCache(), { entries: 0, bytes: 0 });
  pool.add(raw(0), 0);
  assertEquals(app.signatureCache(), { entries: 1, bytes: raw(0).length });
  const r = run(app, [tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 })]);
  pool.afterCommit(r.tx_hashes, 0);
  assertEquals(app.signatureCache(), { entries: 0, bytes: 0 });
  app.close();
});
