import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { nextAppHash } from "../../../ledger/state/app_hash.ts";
import { type Change, Overlay, sortChanges } from "../../../ledger/state/overlay.ts";
import { LedgerStore } from "../../../ledger/state/store.ts";
import { run, testApp } from "../_fixture.ts";

Deno.test("the app hash is sha256 of the previous 32 raw bytes followed by sha256 of the canonical sorted changes", () => {
  const prev = "00".repeat(31) + "01";
  const changes: Change[] = [["account", "02aa", { balance: 5, nonce: 1 }], ["totals", "supply", null]];
  const inner = createHash("sha256").update(
    '[["account","02aa",{"balance":5,"nonce":1}],["totals","supply",null]]',
  ).digest();
  const outer = createHash("sha256").update(Buffer.concat([Buffer.from(prev, "hex"), inner])).digest("hex");
  equal(nextAppHash(prev, changes), outer);
  equal(
    nextAppHash(prev, []),
    createHash("sha256").update(
      Buffer.concat([Buffer.from(prev, "hex"), createHash("sha256").update("[]").digest()]),
    ).digest("hex"),
  );
});

Deno.test("changes sort by table then key by code point, whatever order they were written in", () => {
  const o = new Overlay(new LedgerStore(":memory:"));
  o.set("validator", "b", 1);
  o.set("account", "z", 2);
  o.set("account", "a", 3);
  o.set("account", "a", 4); // the final value of a key is what is recorded
  assertEquals(o.changes(), [["account", "a", 4], ["account", "z", 2], ["validator", "b", 1]]);
  assertEquals(sortChanges([["b", "", 0], ["a", "\u00e9", 1], ["a", "f", 2]]), [["a", "f", 2], [
    "a",
    "\u00e9",
    1,
  ], ["b", "", 0]]);
});

Deno.test('an empty block still chains the app hash: app_hash[h] = sha256(app_hash[h-1] ‖ sha256("[]"))', () => {
  const app = testApp();
  const before = app.info().app_hash;
  const r = run(app, []);
  equal(r.app_hash, nextAppHash(before, []));
  app.close();
});

Deno.test("an overlay never writes to its parent until merged, and a dropped child leaves no trace", () => {
  const store = new LedgerStore(":memory:");
  const block = new Overlay(store);
  block.set("account", "x", { balance: 1, nonce: 0 });
  const child = block.fork();
  child.set("account", "x", { balance: 2, nonce: 1 });
  child.set("account", "y", { balance: 3, nonce: 0 });
  assertEquals(block.get("account", "x"), { balance: 1, nonce: 0 });
  assertEquals(child.scan("account"), [["x", { balance: 2, nonce: 1 }], ["y", { balance: 3, nonce: 0 }]]);
  assertEquals(store.get("account", "x"), null);
  child.mergeInto(block);
  assertEquals(block.get("account", "y"), { balance: 3, nonce: 0 });
  assertEquals(store.scan("account"), []);
  store.close();
});
