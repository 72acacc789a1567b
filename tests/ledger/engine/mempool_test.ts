import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonicalBytes } from "../../../core/canonical.ts";
import { Mempool } from "../../../ledger/engine/mempool.ts";
import { alice, bob, run, testApp, tx } from "../_fixture.ts";

const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);

Deno.test("the mempool admits against projected state, admits the same bytes once, and re-checks after a commit", () => {
  const app = testApp();
  const pool = new Mempool(app, 3);
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
