/**
 * Verdicts computed ahead of `resolve` in a worker thread (`ledger/training/verdict_ahead.ts`): the verdict is
 * the one the handler would compute, `resolve` uses it and decides exactly as without it, a failed worker keeps
 * nothing (the handler computes the verdict itself), and the key names everything the verdict depends on.
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { LedgerView } from "../../../ledger/state/accessors.ts";
import {
  AHEAD_MIN_BYTES,
  readyChallenge,
  verdictKey,
  VerdictsAhead,
  verdictsAhead,
} from "../../../ledger/training/verdict_ahead.ts";
import type { Challenge } from "../../../workflows/_claim.ts";
import { challenger, Net, stranger } from "./_harness.ts";
import { challengeAndUpload, fraudChallenge, liveChallenge, reserveAndClaim } from "./_flow.ts";

const readyLive = (net: Net) => liveChallenge(net);

function claimState(net: Net, claimId: string): JsonObject {
  return (net.app.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
}

async function disputed(forged: boolean) {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/state.sqlite`;
  const net = new Net({ path });
  const { claimId } = reserveAndClaim(net, forged ? { forge: { what: "optimizer", stage: 1 } } : {});
  // The optimizer forgery of the test pipeline is in the stage's block 3 (as in dispute_test.ts).
  challengeAndUpload(net, claimId, 1, challenger, { block: 3, phase: "update" });
  return { dir, path, net, claimId };
}

for (const forged of [true, false]) {
  Deno.test(`a verdict computed ahead in a worker thread is the handler's (${forged ? "mismatch: optimizer update" : "match"}) and resolve decides with it exactly as without`, async () => {
    const { dir, path, net, claimId } = await disputed(forged);
    try {
      const ready = readyChallenge(new LedgerView(net.app.store))!;
      assert.equal(ready.claimId, claimId);
      const key = verdictKey(claimId, ready.challenge);
      const before = { ...verdictsAhead.counts };
      // The devnet model's stage is small: compute it ahead all the same (a real model's block is 15 MB).
      verdictsAhead.schedule(path, new LedgerView(net.app.store));
      assert.equal(verdictsAhead.counts.started, before.started, "a small dispute is resolved inline");
      verdictsAhead.minBytes = 0;
      verdictsAhead.schedule(path, new LedgerView(net.app.store));
      assert.equal(verdictsAhead.computing(claimId), true);
      verdictsAhead.schedule(path, new LedgerView(net.app.store)); // once per key
      await verdictsAhead.settled();
      assert.equal(verdictsAhead.computing(claimId), false);
      assert.equal(verdictsAhead.counts.started - before.started, 1);
      assert.equal(verdictsAhead.counts.kept - before.kept, 1);
      const v = verdictsAhead.take(key)!;
      assert.equal(v.verdict, forged ? "mismatch" : "match");
      if (v.verdict === "mismatch") assert.equal(v.what, "optimizer update");
      const taken = verdictsAhead.counts.taken;
      net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
      assert.equal(verdictsAhead.counts.taken, taken + 1, "resolve used the verdict computed ahead");
      const st = claimState(net, claimId);
      if (forged) {
        assert.equal(st.status, "rejected");
        assert.equal(st.reason, "mismatch: optimizer update");
      } else {
        assert.equal(st.status, "claimed"); // the challenger's bond burned, the window reopened
        assert.equal((st.claim as JsonObject).challenge, null);
      }
    } finally {
      verdictsAhead.minBytes = AHEAD_MIN_BYTES;
      net.app.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("a worker that cannot read the state keeps no verdict: resolve computes it itself and rejects the forgery", async () => {
  const { dir, net, claimId } = await disputed(true);
  try {
    const ahead = new VerdictsAhead();
    ahead.minBytes = 0;
    ahead.schedule(`${dir}/missing/state.sqlite`, new LedgerView(net.app.store));
    await ahead.settled();
    assert.deepEqual({ kept: ahead.counts.kept, failed: ahead.counts.failed }, { kept: 0, failed: 1 });
    assert.equal(
      ahead.take(verdictKey(claimId, readyChallenge(new LedgerView(net.app.store))!.challenge)),
      undefined,
    );
    net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
    assert.equal(claimState(net, claimId).reason, "mismatch: optimizer update");
  } finally {
    net.app.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("nothing is computed ahead before every needed object is sealed; the key names claim, stage and sealed roots", async () => {
  const dir = await Deno.makeTempDir();
  const net = new Net({ path: `${dir}/state.sqlite` });
  try {
    const { claimId } = reserveAndClaim(net, { forge: { what: "optimizer", stage: 1 } });
    fraudChallenge(net, claimId, 1, challenger);
    assert.equal(readyChallenge(new LedgerView(net.app.store)), null);
    const ahead = new VerdictsAhead();
    ahead.minBytes = 0;
    ahead.enabled = true;
    ahead.schedule(`${dir}/state.sqlite`, new LedgerView(net.app.store));
    assert.equal(ahead.counts.started, 0);
    // The proposer holds its resolve while an object is unsealed, but not within 5 blocks of the deadline.
    const deadline = readyLive(net).deadline as number;
    assert.equal(ahead.holds(new LedgerView(net.app.store), claimId, net.height), true);
    assert.equal(ahead.holds(new LedgerView(net.app.store), claimId, deadline - 5), false);
    assert.equal(ahead.holds(new LedgerView(net.app.store), "0".repeat(64), net.height), false);
    ahead.enabled = false;
    assert.equal(ahead.holds(new LedgerView(net.app.store), claimId, net.height), false);
    const c: Challenge = {
      owner: "a",
      kind: "fraud",
      stage: 1,
      block: 0,
      phase: "update",
      object_root: null,
      bond: 1,
      needed: ["x", "y"],
      uploads: [],
      sealed: ["x", "y"],
      deadline: 9,
    };
    const k = verdictKey(claimId, c);
    assert.notEqual(verdictKey(claimId, { ...c, stage: 0 }), k);
    assert.notEqual(verdictKey(claimId, { ...c, sealed: ["x"] }), k);
    assert.notEqual(verdictKey(claimId, { ...c, block: 1 }), k);
    assert.notEqual(verdictKey(claimId, { ...c, phase: "backward" }), k);
    assert.notEqual(verdictKey("other", c), k);
    assert.equal(verdictKey(claimId, { ...c, deadline: 99, owner: "b" }), k);
  } finally {
    net.app.close();
    await Deno.remove(dir, { recursive: true });
  }
});
