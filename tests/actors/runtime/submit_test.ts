import assert from "node:assert/strict";
import { sha256Hex } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { Journal } from "../../../actors/runtime/journal.ts";
import { parseBroadcastAnswer, parseTxAnswer } from "../../../actors/runtime/rpc_types.ts";
import { Submitter } from "../../../actors/runtime/submit.ts";
import { TransportClient } from "../../../actors/runtime/transport.ts";
import { startLossyRpc } from "./_lossy_rpc.ts";
import { tempDir } from "./_temp.ts";

const RAW = new TextEncoder().encode(
  '{"body":{"kind":"transfer","nonce":3},"public_key":"02aa","signature":"30"}',
);
const HASH = sha256Hex(RAW);

/** A submitter over a fresh journal and a lossy RPC, and a signer that counts its calls. */
function setup(options = { confirmMs: 400, pollMs: 20 }) {
  const path = `${tempDir("submit_test_")}/journal.sqlite`;
  const rpc = startLossyRpc();
  const journal = Journal.open(path);
  const signs = { count: 0 };
  const sign = () => {
    signs.count++;
    return RAW;
  };
  const submitter = new Submitter(journal, new TransportClient(rpc.url, null, { timeoutMs: 1000 }), options);
  return { path, rpc, journal, submitter, sign, signs };
}

Deno.test("a transaction answered and then committed is recorded committed with its height and exact bytes", async () => {
  const { rpc, journal, submitter, sign, signs } = setup();
  const rec = await submitter.submit("intent-1", sign);
  assert.deepEqual(
    [rec.status, rec.height, rec.hash, rec.code, rec.message],
    ["committed", 1, HASH, null, null],
  );
  assert.deepEqual(rec.raw, RAW);
  assert.deepEqual(rpc.received, [RAW]);
  assert.equal(signs.count, 1);
  journal.close();
  await rpc.close();
});

Deno.test("a lost broadcast reply is resolved by looking the hash up, without re-signing or re-sending", async () => {
  const { rpc, journal, submitter, sign, signs } = setup();
  rpc.plan = ["drop_after_store"];
  rpc.commitOnLookup = 3;
  const rec = await submitter.submit("intent-1", sign);
  assert.deepEqual([rec.status, rec.height, rec.hash], ["committed", 1, HASH]);
  assert.equal(rpc.received.length, 1);
  assert.equal(signs.count, 1);
  journal.close();
  await rpc.close();
});

Deno.test("a broadcast that never arrived is sent again with the same bytes, never a new signature", async () => {
  const { rpc, journal, submitter, sign, signs } = setup();
  rpc.plan = ["drop_before_store", "drop_before_store"];
  const rec = await submitter.submit("intent-1", sign);
  assert.equal(rec.status, "committed");
  assert.deepEqual(rpc.received, [RAW, RAW, RAW]);
  assert.equal(signs.count, 1);
  journal.close();
  await rpc.close();
});

Deno.test("a CheckTx refusal is recorded rejected with its code and message", async () => {
  const { rpc, journal, submitter, sign } = setup();
  rpc.check = { ok: false, code: "stale_nonce", message: "Cannot apply transaction: nonce is 3, expected 5" };
  const rec = await submitter.submit("intent-1", sign);
  assert.deepEqual(
    [rec.status, rec.height, rec.code, rec.message],
    ["rejected", null, "stale_nonce", "Cannot apply transaction: nonce is 3, expected 5"],
  );
  journal.close();
  await rpc.close();
});

Deno.test("a transaction included with a failed result is recorded rejected with its height", async () => {
  const { rpc, journal, submitter, sign } = setup();
  rpc.result = { ok: false, code: "insufficient_funds", message: "Cannot transfer: balance is 1, needed 9" };
  const rec = await submitter.submit("intent-1", sign);
  assert.deepEqual([rec.status, rec.height, rec.code], ["rejected", 1, "insufficient_funds"]);
  journal.close();
  await rpc.close();
});

Deno.test("no confirmation by the deadline is unknown; submitting the intent again resumes with the same bytes", async () => {
  const { rpc, journal, submitter, sign, signs } = setup();
  rpc.plan = ["drop_after_store"];
  rpc.commitOnLookup = Infinity;
  const t0 = Date.now();
  const first = await submitter.submit("intent-1", sign);
  assert.ok(Date.now() - t0 < 2000);
  assert.deepEqual([first.status, first.hash], ["unknown", HASH]);
  rpc.commitOnLookup = 1;
  const second = await submitter.submit("intent-1", () => {
    throw new Error("must not sign again");
  });
  assert.deepEqual([second.status, second.hash], ["committed", HASH]);
  assert.equal(signs.count, 1);
  assert.deepEqual(rpc.received, [RAW]);
  journal.close();
  await rpc.close();
});

Deno.test("a settled intent is returned from the journal after a restart without contacting the validator", async () => {
  const { path, rpc, journal, submitter, sign } = setup();
  const first = await submitter.submit("intent-1", sign);
  journal.close();
  const requests = rpc.requests;
  const again = new Submitter(Journal.open(path), new TransportClient(rpc.url, null));
  const second = await again.submit("intent-1", () => new Uint8Array([1]));
  assert.deepEqual(second, first);
  assert.equal(rpc.requests, requests);
  assert.deepEqual(again.records().map((r) => r.intent), ["intent-1"]);
  again.journal.close();
  await rpc.close();
});

Deno.test("a record left signed by a crashed process is settled by the next one with the recorded bytes", async () => {
  const { path, rpc, journal } = setup();
  journal.db.prepare(
    "INSERT INTO submissions(intent, format, hash, raw, status, seq) VALUES ('intent-1', 1, ?, ?, 'signed', 1)",
  ).run(HASH, RAW);
  journal.close();
  const next = new Submitter(Journal.open(path), new TransportClient(rpc.url, null), {
    confirmMs: 400,
    pollMs: 20,
  });
  const rec = await next.submit("intent-1", () => {
    throw new Error("must not sign again");
  });
  assert.equal(rec.status, "committed");
  assert.deepEqual(rpc.received, [RAW]);
  next.journal.close();
  await rpc.close();
});

Deno.test("an unreachable validator leaves the intent unknown, never rejected", async () => {
  const { rpc, journal, submitter, sign } = setup({ confirmMs: 200, pollMs: 20 });
  await rpc.close();
  const rec = await submitter.submit("intent-1", sign);
  assert.deepEqual([rec.status, rec.code], ["unknown", null]);
  journal.close();
});

Deno.test("RPC answers are parsed strictly", () => {
  assert.deepEqual(parseBroadcastAnswer({ hash: HASH, check: { ok: true } }), {
    hash: HASH,
    check: { ok: true },
  });
  assert.deepEqual(parseTxAnswer({ status: "committed", height: 4, result: { ok: true } }), {
    status: "committed",
    height: 4,
    result: { ok: true },
  });
  const bad = [
    () => parseBroadcastAnswer({ hash: HASH.toUpperCase(), check: { ok: true } }),
    () => parseBroadcastAnswer({ hash: HASH, check: { ok: false, code: "made_up", message: "" } }),
    () => parseBroadcastAnswer({ hash: HASH, check: { ok: true }, extra: 1 }),
    () => parseTxAnswer({ status: "committed", height: 0, result: { ok: true } }),
    () => parseTxAnswer({ status: "pending", height: 1 }),
    () => parseTxAnswer({ status: "done" }),
  ];
  for (const f of bad) {
    assert.throws(f, (e: unknown) => e instanceof ProtocolError && e.code === "bad_request");
  }
});
