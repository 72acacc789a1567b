import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { LedgerApp } from "../../../ledger/app.ts";
import { challenger, Net, stranger } from "./_harness.ts";
import { challengeAndUpload, reserveAndClaim } from "./_flow.ts";

Deno.test("a second validator replaying the blocks of a dispute (uploads, seals, the referee's resolve) reaches the same app hash at every height", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net, { forge: { what: "backward", stage: 1 } });
  challengeAndUpload(net, claimId, 1, challenger);
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  net.block();
  const replica = LedgerApp.open(":memory:", net.genesis);
  for (let h = 1; h <= net.app.info().height; h++) {
    const stored = net.app.store.block(h)!;
    const r = replica.finalizeBlock(stored.block);
    replica.commit();
    assert.equal(r.app_hash, stored.app_hash, `app hash at height ${h}`);
  }
  const st = (replica.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
  assert.equal(st.reason, "mismatch: input gradient");
  replica.close();
  net.app.close();
});
