import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { scanSums } from "../../../ledger/state/conservation.ts";
import { challenger, Net, owners, sponsor, workers } from "./_harness.ts";
import { fraudChallenge, reserveAndClaim } from "./_flow.ts";

const FEE = DEVNET_PARAMS.fee;
const BOND = DEVNET_PARAMS.claim_bond;

Deno.test("an unchallenged claim is accepted after its window: exactly 1,000,000 atoms minted, 800,000 to the workers and 200,000 to the committers in the next block", () => {
  const net = new Net();
  const genesisRoot = net.model.root;
  const before = [sponsor, ...workers.slice(0, 2)].map((k) => net.balance(k).balance);
  const issued0 = net.totals().issued;
  const { claimId, height, step } = reserveAndClaim(net);
  assert.equal(net.balance(sponsor).balance, before[0]! - 2 * FEE - BOND);
  const claimed = net.lifecycle().claim as JsonObject;
  assert.equal(claimed.claim_id, claimId);
  assert.equal((claimed.state as JsonObject).status, "claimed");
  // The window is open through height + challenge_blocks; the claim is accepted at the next height.
  net.until(height + DEVNET_PARAMS.challenge_blocks + 1);
  assert.equal((net.lifecycle().claim as JsonObject).claim_id, claimId);
  net.block();
  const acceptedAt = height + DEVNET_PARAMS.challenge_blocks + 1;
  const l = net.lifecycle();
  assert.equal(l.claim, null);
  assert.equal(l.learning_root, step.candidateRoot);
  assert.equal(l.serving_root, genesisRoot);
  assert.equal(l.training_round, 1);
  assert.deepEqual(l.period, { index: 0, steps: 1, growths: 0 });
  assert.equal(net.totals().issued - issued0, 1_000_000);
  assert.equal(net.balance(sponsor).balance, before[0]! - 2 * FEE);
  assert.equal(net.balance(workers[0]!).balance, before[1]! + 400_000);
  assert.equal(net.balance(workers[1]!).balance, before[2]! + 400_000);
  assert.equal(net.app.store.get("verifier_pool", String(acceptedAt)), 200_000);
  assert.equal(net.balance(owners[0]!).balance, 0);
  net.block(); // the committers of the accepting block share its 200,000 in the next block
  assert.equal(net.app.store.get("verifier_pool", String(acceptedAt)), null);
  assert.equal(net.balance(owners[0]!).balance, 100_000);
  assert.equal(net.balance(owners[1]!).balance, 100_000);
  const claim = net.app.query(`/claim?id=${claimId}`) as JsonObject;
  assert.equal((claim.state as JsonObject).status, "settled");
  assert.equal(claim.metadata && Object.keys(claim.metadata as JsonObject).length, 6);
  const work = (claim.state as { work: { work_identity: string } }).work.work_identity;
  assert.deepEqual(net.app.query(`/work?identity=${work}`), {
    identity: work,
    paid: true,
    claim_id: claimId,
  });
  assert.deepEqual(net.app.query("/candidate"), {
    learning_root: step.candidateRoot,
    serving_root: genesisRoot,
    manifest: step.candidate,
  });
  net.app.close();
});

Deno.test("re-submitting an accepted claim fails on the nonce and changes nothing", () => {
  const net = new Net();
  const { claim } = reserveAndClaim(net);
  net.rejects(claim, "stale_nonce");
  net.app.close();
});

Deno.test("the reward remainder goes to the first workers: 800,000 over 3 workers is 266,667, 266,667, 266,666", () => {
  const net = new Net();
  const three = [["embed", "norm"], ["block_000", "block_001"], ["block_002", "block_003"]];
  const before = workers.map((k) => net.balance(k).balance);
  const { height } = reserveAndClaim(net, { partitions: three });
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  assert.deepEqual(workers.map((k, i) => net.balance(k).balance - before[i]!), [266_667, 266_667, 266_666]);
  net.app.close();
});

Deno.test("an expired reservation burns 10% of the bond and refunds 90%", () => {
  const net = new Net();
  const start = net.balance(sponsor).balance;
  const burned0 = net.totals().burned;
  const r = net.tx(sponsor, "reserve", {
    parent: net.model.root,
    round: 0,
    workers: workers.slice(0, 2).map((k) => k.accountId),
  });
  const h = net.height;
  net.ok(r);
  const expires = (net.lifecycle().assignment as JsonObject).expires as number;
  assert.equal(expires, h + DEVNET_PARAMS.lease_blocks);
  net.until(expires + 1);
  assert.notEqual(net.lifecycle().assignment, null);
  net.block();
  assert.equal(net.lifecycle().assignment, null);
  assert.equal(net.balance(sponsor).balance, start - FEE - 2_000_000);
  assert.equal(net.totals().burned - burned0, FEE + 2_000_000);
  net.app.close();
});

Deno.test("bonds held by a reservation, a claim and a challenge are escrows in the conservation sums", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  assert.equal(scanSums(net.app.store).escrows, BOND);
  fraudChallenge(net, claimId, 0, challenger, { block: "head", phase: "forward" });
  const s = scanSums(net.app.store);
  assert.equal(s.escrows, BOND + DEVNET_PARAMS.challenge_bond);
  assert.equal(s.genesis_supply + s.issued, s.balances + s.bonds + s.escrows + s.burned);
  net.app.close();
});
