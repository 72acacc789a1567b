import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { reserveAndClaim } from "../training/_flow.ts";
import { Net, sponsor, stranger } from "../training/_harness.ts";
import { activate, dataNet, nextCohort } from "../data/_net.ts";
import {
  evaluationAnswer,
  finishTx,
  open,
  scoreAll,
  scoreProof,
  scoreTx,
  trainedNet,
  windowsOf,
} from "./_eval.ts";

function groups(net: Net, id: string): Record<string, JsonObject> {
  return evaluationAnswer(net, id).groups as Record<string, JsonObject>;
}

Deno.test("open_evaluation binds the serving and learning roots and the cohort's 32 + 32 documents", () => {
  const { net, cohort } = trainedNet();
  const l = net.lifecycle();
  const id = open(net);
  const e = evaluationAnswer(net, id);
  assert.deepEqual([e.baseline, e.candidate, e.cohort, e.status], [
    l.serving_root,
    l.learning_root,
    cohort.root,
    "open",
  ]);
  assert.equal(e.expires, net.height - 1 + DEVNET_PARAMS.evaluation_blocks);
  const roles = (r: string) =>
    cohort.document.documents.filter((d) => d.role === r).flatMap((d) => d.batches);
  assert.deepEqual(e.windows, { retention: roles("retention"), fresh: roles("fresh") });
  assert.deepEqual((e.layout as JsonObject).fresh, Array.from({ length: 32 }, (_, i) => i));
  assert.deepEqual(groups(net, id).candidate_fresh, { settled: 0, total: 32, pending: null });
  assert.equal((evaluationAnswer(net).live as JsonObject).evaluation_id, id);
  // Only one at a time, and a cohort is evaluated once.
  assert.match(net.rejects(net.tx(sponsor, "open_evaluation", {}), "busy"), /evaluation .* is live/);
});

Deno.test("open_evaluation is refused before the cohort's steps settle and on a chain without cohorts", () => {
  const net = dataNet({ params: { steps_per_cohort: 1 } });
  assert.match(
    net.rejects(net.tx(sponsor, "open_evaluation", {}), "invalid_transition"),
    /latest cohort is none/,
  );
  activate(net, nextCohort(net, "eval"));
  assert.match(
    net.rejects(net.tx(sponsor, "open_evaluation", {}), "invalid_transition"),
    /is training, expected trained/,
  );
  const { height } = reserveAndClaim(net);
  // The claim is pending: still training.
  net.rejects(net.tx(sponsor, "open_evaluation", {}), "invalid_transition");
  net.until(height + DEVNET_PARAMS.challenge_blocks + 3);
  open(net);
  const plain = new Net();
  assert.match(
    plain.rejects(plain.tx(sponsor, "open_evaluation", {}), "invalid_transition"),
    /no data lifecycle/,
  );
});

Deno.test("finish_evaluation is refused until every window of all four groups has settled", () => {
  const { net } = trainedNet();
  const id = open(net);
  assert.match(net.rejects(finishTx(net, id), "invalid_transition"), /are not fully settled/);
  net.ok(scoreTx(net, id, "baseline", "fresh", 0, scoreProof(net, id, "baseline", "fresh", 0)));
  assert.match(net.rejects(finishTx(net, id), "invalid_transition"), /baseline_retention,baseline_fresh,/);
  net.rejects(finishTx(net, "9".repeat(64)), "unknown_evaluation");
});

Deno.test("bad scores are refused with the state unchanged: out of order, offset 2, duplicated, wrong model, substituted windows", () => {
  const { net } = trainedNet();
  const id = open(net);
  const e = evaluationAnswer(net, id);
  const proof = (offset: number) => scoreProof(net, id, "candidate", "fresh", offset);
  assert.match(
    net.rejects(scoreTx(net, id, "candidate", "fresh", 4, proof(4)), "out_of_order"),
    /offset is 4, expected 0 of 32/,
  );
  assert.match(
    net.rejects(scoreTx(net, id, "candidate", "fresh", 2, proof(0)), "out_of_order"),
    /offset is 2/,
  );
  // A record of the baseline model submitted for the candidate side.
  const baseline = scoreProof(net, id, "baseline", "fresh", 0);
  assert.match(
    net.rejects(scoreTx(net, id, "candidate", "fresh", 0, baseline), "wrong_model"),
    new RegExp(`scores model ${e.baseline}, the side's model is ${e.candidate}`),
  );
  // The right model over other windows (the retention ones) for the fresh group.
  const swapped = scoreProof(net, id, "candidate", "fresh", 0, () => null, {
    windows: windowsOf(net, id, "retention").slice(0, 4),
  });
  assert.match(
    net.rejects(scoreTx(net, id, "candidate", "fresh", 0, swapped), "invalid_record"),
    /windows are not the assigned 4 windows/,
  );
  // Three of the four windows.
  const short = scoreProof(net, id, "candidate", "fresh", 0, () => null, {
    windows: windowsOf(net, id, "fresh").slice(0, 3),
  });
  net.rejects(scoreTx(net, id, "candidate", "fresh", 0, short), "invalid_record");
  net.rejects(scoreTx(net, "9".repeat(64), "candidate", "fresh", 0, proof(0)), "unknown_evaluation");
  const bad = net.tx(sponsor, "score", {
    evaluation_id: id,
    side: "judge",
    role: "fresh",
    offset: 0,
    record_root: proof(0).recordRoot,
    metadata: {},
  });
  net.rejects(bad, "bad_request");
  // Accepted once; the same group again while it is pending is busy, and after it settles the offset moved on.
  const first = scoreTx(net, id, "candidate", "fresh", 0, proof(0));
  net.ok(first);
  assert.match(net.rejects(scoreTx(net, id, "candidate", "fresh", 0, proof(0)), "busy"), /is pending/);
  net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  assert.deepEqual(groups(net, id).candidate_fresh, { settled: 4, total: 32, pending: null });
  assert.match(
    net.rejects(scoreTx(net, id, "candidate", "fresh", 0, proof(0)), "out_of_order"),
    /offset is 0, expected 4/,
  );
  // Anyone may score; a stranger without funds for the bond cannot.
  const broke = net.tx(stranger, "transfer", {
    to: sponsor.accountId,
    amount: net.balance(stranger).balance - 2_000,
  });
  net.ok(broke);
  net.rejects(scoreTx(net, id, "candidate", "fresh", 4, proof(4), stranger), "insufficient_funds");
});

Deno.test("a score mints nothing: its bond is locked and refunded, the fee is burned, and its losses join the group", () => {
  const { net } = trainedNet();
  const id = open(net);
  const issued = net.totals().issued;
  const before = net.balance(sponsor).balance;
  const p = scoreProof(net, id, "baseline", "retention", 0);
  net.ok(scoreTx(net, id, "baseline", "retention", 0, p));
  assert.equal(net.balance(sponsor).balance, before - DEVNET_PARAMS.fee - DEVNET_PARAMS.claim_bond);
  net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  assert.equal(net.balance(sponsor).balance, before - DEVNET_PARAMS.fee);
  assert.equal(net.totals().issued, issued);
  const m = ((evaluationAnswer(net, id).measurements as JsonObject).baseline as JsonObject)
    .retention as JsonObject[];
  assert.deepEqual(m.map((x) => x.loss), p.head.losses);
  assert.deepEqual(m.map((x) => x.document), [0, 1, 2, 3]);
  scoreAll(net, id);
  net.ok(finishTx(net, id));
  assert.equal(net.totals().issued, issued);
  assert.match(net.rejects(finishTx(net, id), "invalid_transition"), /it is decided/);
  assert.match(
    net.rejects(net.tx(sponsor, "open_evaluation", {}), "invalid_transition"),
    /was evaluated already/,
  );
});
