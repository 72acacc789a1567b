import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { JsonValue } from "../../core/canonical.ts";
import { creditVerifierReward } from "../../ledger/boundary.ts";
import type { LedgerApp } from "../../ledger/app.ts";
import { alice, attest, bondTx, cons, owners, run, snapshot, testApp, tx } from "./_fixture.ts";

function balance(app: LedgerApp, id: string): number {
  return (app.query(`/account/${id}`) as { balance: number }).balance;
}

function validator(app: LedgerApp, key: string) {
  return app.store.get("validator", key) as {
    state: { status: string };
    history: [number, number][];
    amount: number;
  };
}

function code(r: { ok: boolean; code?: string }): string {
  return r.ok ? "ok" : r.code!;
}

/** Runs one block with `t` and asserts it was rejected with `expected` and changed nothing. */
function assertRejected(app: LedgerApp, t: JsonValue, expected: string) {
  const before = snapshot(app);
  const r = run(app, [t]);
  assertEquals(code(r.results[0]!), expected, r.results[0]!.ok ? "" : r.results[0]!.message);
  assertEquals(snapshot(app), before);
}

Deno.test("bond locks the amount, burns the fee and activates at the first epoch boundary after activation_blocks", () => {
  const app = testApp(); // epoch_blocks 5, activation_blocks 2
  const r = run(app, [bondTx(alice, cons[2]!, 500_000, 0)]); // height 1 → activates at 5
  assertEquals(r.results, [{ ok: true }]);
  assertEquals(balance(app, alice.accountId), 10_000_000 - 500_000 - 1_000);
  assertEquals(validator(app, cons[2]!.publicKey).state, { status: "pending", activation_height: 5 });
  for (let h = 2; h <= 4; h++) run(app, []);
  assertEquals(validator(app, cons[2]!.publicKey).state.status, "pending");
  run(app, []); // height 5
  assertEquals(validator(app, cons[2]!.publicKey).state, { status: "active" });
  assertEquals(validator(app, cons[2]!.publicKey).history, [[5, 2]]);
  assertEquals(app.store.get("totals", "supply"), { genesis_supply: 14_000_000, issued: 0, burned: 1_000 });
  app.close();
});

Deno.test("bond rejections: bad possession, reused key, not a bond unit, insufficient funds; state unchanged", () => {
  const app = testApp();
  const good = bondTx(alice, cons[2]!, 500_000, 0);
  // A possession proof made for another amount does not verify for this one.
  const other = bondTx(alice, cons[2]!, 250_000, 0);
  assertRejected(
    app,
    { ...tx(alice, "bond", 0, { ...good.body, possession: other.body.possession! }) },
    "invalid_possession",
  );
  // A possession signed by another key.
  const wrongKey = bondTx(alice, cons[3]!, 500_000, 0);
  assertRejected(
    app,
    tx(alice, "bond", 0, { ...good.body, possession: wrongKey.body.possession! }),
    "invalid_possession",
  );
  assertRejected(app, bondTx(alice, cons[0]!, 250_000, 0), "reused_consensus_key");
  assertRejected(app, bondTx(alice, cons[2]!, 300_000, 0), "invalid_bond_amount");
  assertRejected(app, bondTx(alice, cons[2]!, 0, 0), "invalid_amount");
  assertRejected(app, bondTx(alice, cons[2]!, 10_000_000, 0), "insufficient_funds");
  assertRejected(
    app,
    tx(alice, "bond", 0, { consensus_key: cons[2]!.publicKey, amount: 250_000 }),
    "invalid_body",
  );
  app.close();
});

Deno.test("a consensus key can never be bonded again, even after its validator withdrew", () => {
  const app = testApp();
  run(app, [bondTx(alice, cons[2]!, 250_000, 0)]);
  run(app, [tx(alice, "unbond", 1, { consensus_key: cons[2]!.publicKey })]); // pending → cooldown at once
  assertEquals(validator(app, cons[2]!.publicKey).state, {
    status: "cooldown",
    removed_height: 2,
    removed_time: 1_700_000_002_000,
  });
  assertRejected(app, bondTx(alice, cons[2]!, 250_000, 2), "reused_consensus_key");
  app.close();
});

Deno.test("unbond and withdraw: unknown validator, not the owner, last active validator, early withdraw", () => {
  const app = testApp();
  assertRejected(
    app,
    tx(owners[0]!, "unbond", 0, { consensus_key: cons[3]!.publicKey }),
    "unknown_validator",
  );
  assertRejected(app, tx(alice, "unbond", 0, { consensus_key: cons[0]!.publicKey }), "not_owner");
  assertRejected(
    app,
    tx(owners[0]!, "withdraw", 0, { consensus_key: cons[0]!.publicKey }),
    "withdraw_too_early",
  );
  // Validator 0 unbonds (validator 1 stays active); it leaves at the next epoch boundary (height 5).
  assertEquals(run(app, [tx(owners[0]!, "unbond", 0, { consensus_key: cons[0]!.publicKey })]).results, [{
    ok: true,
  }]);
  assertEquals(validator(app, cons[0]!.publicKey).state, { status: "leaving", leave_height: 5 });
  // Validator 1 is now the last active one.
  const owner1 = owners[1]!;
  const funded = run(app, [tx(alice, "transfer", 0, { to: owner1.accountId, amount: 10_000 })]);
  assertEquals(funded.results, [{ ok: true }]);
  assertRejected(app, tx(owner1, "unbond", 0, { consensus_key: cons[1]!.publicKey }), "last_validator");
  run(app, []);
  run(app, []); // heights 7 and 8 (validator 0 was removed at the tick of height 5)
  assertEquals(validator(app, cons[0]!.publicKey).state, {
    status: "cooldown",
    removed_height: 5,
    removed_time: 1_700_000_005_000,
  });
  assertEquals(validator(app, cons[0]!.publicKey).history, [[0, 4], [5, 0]]);
  // evidence_blocks 3 and evidence_ms 10,000: height 11 is past 5 + 3 blocks but its time is not 10 s later.
  run(app, []);
  run(app, []);
  assertRejected(
    app,
    tx(owners[0]!, "withdraw", 1, { consensus_key: cons[0]!.publicKey }),
    "withdraw_too_early",
  );
  const before = balance(app, owners[0]!.accountId);
  const late = run(
    app,
    [tx(owners[0]!, "withdraw", 1, { consensus_key: cons[0]!.publicKey })],
    [],
    1_700_000_015_000,
  );
  assertEquals(late.results, [{ ok: true }]);
  assertEquals(balance(app, owners[0]!.accountId), before + 1_000_000 - 1_000);
  assertEquals(validator(app, cons[0]!.publicKey).state, { status: "withdrawn", withdrawn_height: 12 });
  assertRejected(
    app,
    tx(owners[0]!, "withdraw", 2, { consensus_key: cons[0]!.publicKey }),
    "invalid_transition",
  );
  app.close();
});

Deno.test("the verifier reward of block h is paid in block h+1 to its committers by power, remainder burned", () => {
  let credit = 0;
  const app = testApp({
    afterTransactions: (state, env) => credit && creditVerifierReward(state, env.height, credit),
  });
  // The two genesis validators have power 4 each.
  credit = 1_001;
  run(app, []); // height 1 issues 1,001 atoms into the pool of block 1
  credit = 0;
  assertEquals(app.store.get("verifier_pool", "1"), 1_001);
  const b0 = balance(app, owners[0]!.accountId);
  const b1 = balance(app, owners[1]!.accountId);
  run(app, [], attest(app, [cons[0]!, cons[1]!])); // height 2 pays 500 + 500, burns 1
  assertEquals(balance(app, owners[0]!.accountId) - b0, 500);
  assertEquals(balance(app, owners[1]!.accountId) - b1, 500);
  assertEquals(app.store.get("verifier_pool", "1"), null);
  assertEquals(app.store.get("totals", "supply"), { genesis_supply: 14_000_000, issued: 1_001, burned: 1 });
  // Only one committer: it takes all of the next reward.
  credit = 999;
  run(app, []);
  credit = 0;
  run(app, [], attest(app, [cons[1]!]));
  assertEquals(balance(app, owners[1]!.accountId) - b1, 500 + 999);
  // No committer: all burned.
  credit = 7;
  run(app, []);
  credit = 0;
  run(app, []);
  assertEquals(app.store.get("totals", "supply"), { genesis_supply: 14_000_000, issued: 2_007, burned: 8 });
  app.close();
});

Deno.test("a block whose last commit has an attestation by a key without power is refused", () => {
  const app = testApp();
  const bad = attest(app, [cons[3]!]);
  let message = "";
  try {
    run(app, [], bad);
  } catch (e) {
    message = (e as Error).message;
  }
  assertEquals(message.includes("had no power at 0"), true, message);
  assertEquals(app.info().height, 0);
  app.close();
});

Deno.test("a hook that mints without escrowing breaks conservation: the block fails and prints both sides", () => {
  const app = testApp({ afterTransactions: (state) => state.issue(5) });
  let message = "";
  try {
    run(app, []);
  } catch (e) {
    message = (e as Error).message;
  }
  assertEquals(
    message,
    "Cannot commit block 1: conservation broken, genesis supply 14000000 + issued 5 = 14000005 but balances 12000000 + bonds 2000000 + escrows 0 + burned 0 = 14000000",
  );
  assertEquals(app.info().height, 0);
  app.close();
});

Deno.test("unbond and withdraw with an extra or missing field or a malformed key are rejected; state unchanged", () => {
  const app = testApp();
  assertRejected(
    app,
    tx(owners[0]!, "unbond", 0, { consensus_key: cons[0]!.publicKey, amount: 1 }),
    "invalid_body",
  );
  assertRejected(app, tx(owners[0]!, "withdraw", 0, {}), "invalid_body");
  assertRejected(app, tx(owners[0]!, "unbond", 0, { consensus_key: "AB".repeat(32) }), "invalid_key");
  app.close();
});
