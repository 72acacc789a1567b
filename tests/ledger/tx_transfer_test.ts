import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonical, canonicalBytes, type JsonValue } from "../../core/canonical.ts";
import { toHex } from "../../core/hex.ts";
import { CURVE_ORDER } from "../../ledger/keys.ts";
import { decodeDer, encodeDer } from "../../ledger/der.ts";
import type { Envelope } from "../../ledger/envelope.ts";
import { alice, bob, CHAIN, run, snapshot, testApp, tx } from "./_fixture.ts";

function account(app: ReturnType<typeof testApp>, id: string) {
  return app.query(`/account/${id}`);
}

Deno.test("transfer moves the amount, burns the fee of 1,000 atoms and increments the nonce", () => {
  const app = testApp();
  const r = run(app, [tx(alice, "transfer", 0, { to: bob.accountId, amount: 250_000 })]);
  assertEquals(r.results, [{ ok: true }]);
  assertEquals(account(app, alice.accountId), {
    id: alice.accountId,
    balance: 10_000_000 - 250_000 - 1_000,
    nonce: 1,
    height: 1,
  });
  assertEquals(account(app, bob.accountId), { id: bob.accountId, balance: 250_000, nonce: 0, height: 1 });
  assertEquals(app.store.get("totals", "supply"), { genesis_supply: 14_000_000, issued: 0, burned: 1_000 });
  app.close();
});

Deno.test("two transfers in one block apply in proposer order with consecutive nonces", () => {
  const app = testApp();
  const r = run(app, [
    tx(alice, "transfer", 0, { to: bob.accountId, amount: 1 }),
    tx(alice, "transfer", 1, { to: bob.accountId, amount: 2 }),
  ]);
  assertEquals(r.results, [{ ok: true }, { ok: true }]);
  assertEquals(account(app, bob.accountId), { id: bob.accountId, balance: 3, nonce: 0, height: 1 });
  assertEquals(account(app, alice.accountId), {
    id: alice.accountId,
    balance: 10_000_000 - 3 - 2_000,
    nonce: 2,
    height: 1,
  });
  app.close();
});

/** Applies one rejected envelope in a block and checks the code and that no state changed. */
function assertRejected(envelope: JsonValue, code: string) {
  const app = testApp();
  const before = snapshot(app);
  const r = run(app, [envelope]);
  assertEquals(r.results.length, 1);
  const result = r.results[0]!;
  if (result.ok) throw new Error(`expected ${code}, the transaction was accepted`);
  assertEquals(result.code, code, result.message);
  assertEquals(snapshot(app), before);
  app.close();
}

const good = () => tx(alice, "transfer", 0, { to: bob.accountId, amount: 5 });

Deno.test("transfer with a wrong chain id is rejected with wrong_chain_id and changes nothing", () => {
  assertRejected(
    tx(alice, "transfer", 0, { to: bob.accountId, amount: 5, chain_id: "other" }),
    "wrong_chain_id",
  );
});

Deno.test("transfer with a future nonce is rejected with future_nonce and changes nothing", () => {
  assertRejected(tx(alice, "transfer", 1, { to: bob.accountId, amount: 5 }), "future_nonce");
});

Deno.test("a replayed transfer is rejected with stale_nonce and changes nothing after the first", () => {
  const app = testApp();
  const t = good();
  assertEquals(run(app, [t]).results, [{ ok: true }]);
  const before = snapshot(app);
  const r = run(app, [t]);
  assertEquals(r.results[0]!.ok ? "" : r.results[0]!.code, "stale_nonce");
  assertEquals(snapshot(app), before);
  app.close();
});

Deno.test("transfer with an extra body field is rejected with invalid_body", () => {
  assertRejected(tx(alice, "transfer", 0, { to: bob.accountId, amount: 5, memo: "x" }), "invalid_body");
});

Deno.test("transfer with a missing body field is rejected with invalid_body", () => {
  assertRejected(tx(alice, "transfer", 0, { to: bob.accountId }), "invalid_body");
});

Deno.test("transfer of zero or a negative amount is rejected with invalid_amount", () => {
  assertRejected(tx(alice, "transfer", 0, { to: bob.accountId, amount: 0 }), "invalid_amount");
  assertRejected(tx(alice, "transfer", 0, { to: bob.accountId, amount: -5 }), "invalid_amount");
  assertRejected(tx(alice, "transfer", 0, { to: bob.accountId, amount: "5" }), "invalid_amount");
});

Deno.test("transfer beyond the balance after the fee is rejected with insufficient_funds", () => {
  assertRejected(
    tx(alice, "transfer", 0, { to: bob.accountId, amount: 10_000_000 - 999 }),
    "insufficient_funds",
  );
  assertRejected(tx(bob, "transfer", 0, { to: alice.accountId, amount: 1 }), "insufficient_funds");
});

Deno.test("an unknown transaction kind is rejected with unknown_kind", () => {
  assertRejected(tx(alice, "mint", 0, { amount: 5 }), "unknown_kind");
});

Deno.test("a transfer whose signature belongs to another body is rejected with invalid_signature", () => {
  const t = good();
  const other = tx(alice, "transfer", 0, { to: bob.accountId, amount: 6 });
  assertRejected({ ...t, signature: other.signature }, "invalid_signature");
});

Deno.test("a high-S signature is rejected with invalid_signature", () => {
  const t = good();
  const der = decodeDer(Uint8Array.from(t.signature.match(/../g)!.map((h) => parseInt(h, 16))));
  if (!der.ok) throw new Error(der.message);
  const high: Envelope = { ...t, signature: toHex(encodeDer(der.value.r, CURVE_ORDER - der.value.s)) };
  assertRejected(high, "invalid_signature");
});

Deno.test("checkTx rejects a float amount in raw bytes with float_not_allowed and keeps the projection", () => {
  const app = testApp();
  const text = canonical(good()).replace('"amount":5', '"amount":5.5');
  const projection = app.projection();
  const r = app.checkTx(new TextEncoder().encode(text), projection, 0);
  assertEquals([r.ok, r.ok ? "" : r.code], [false, "float_not_allowed"]);
  assertEquals(projection.size, 0);
  app.close();
});

Deno.test("checkTx admits against the projected state: the second spend of the same nonce is stale", () => {
  const app = testApp();
  const projection = app.projection();
  const a = app.checkTx(canonicalBytes(good()), projection, 0);
  const b = app.checkTx(
    canonicalBytes(tx(alice, "transfer", 0, { to: bob.accountId, amount: 7 })),
    projection,
    0,
  );
  const c = app.checkTx(
    canonicalBytes(tx(alice, "transfer", 1, { to: bob.accountId, amount: 7 })),
    projection,
    0,
  );
  assertEquals([a.ok, b.ok ? "" : b.code, c.ok], [true, "stale_nonce", true]);
  assertEquals(app.query(`/account/${alice.accountId}`), {
    id: alice.accountId,
    balance: 10_000_000,
    nonce: 0,
    height: 0,
  });
  assertEquals(CHAIN, "test-chain");
  app.close();
});
