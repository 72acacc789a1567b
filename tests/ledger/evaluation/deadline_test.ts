import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { workers } from "../training/_harness.ts";
import { evaluationAnswer, finishTx, open, scoreProof, scoreTx, trainedNet } from "./_eval.ts";

Deno.test("an evaluation past its deadline fails: the learning root returns, paid training stays paid", () => {
  const blocks = 20;
  const { net } = trainedNet({ params: { evaluation_blocks: blocks } });
  const before = net.lifecycle();
  const paid = workers.slice(0, 2).map((w) => net.balance(w).balance);
  const issued = net.totals().issued;
  const id = open(net);
  const expires = evaluationAnswer(net, id).expires as number;
  assert.equal(expires, net.height - 1 + blocks);
  // One score settles, one is still pending when the deadline passes.
  net.ok(scoreTx(net, id, "baseline", "fresh", 0, scoreProof(net, id, "baseline", "fresh", 0)));
  net.until(expires - 1);
  const late = scoreTx(net, id, "candidate", "fresh", 0, scoreProof(net, id, "candidate", "fresh", 0));
  net.ok(late);
  net.until(expires + 1);
  net.block(); // the first block past expires
  const e = evaluationAnswer(net, id);
  assert.equal(e.status, "decided");
  assert.deepEqual(e.decision, {
    promoted: false,
    reason: "expired",
    gate: { retention: null, fresh: null },
  });
  const after = net.lifecycle();
  assert.equal(after.learning_root, before.serving_root);
  assert.equal(after.serving_root, before.serving_root);
  assert.equal(after.training_round, before.training_round);
  assert.deepEqual(workers.slice(0, 2).map((w) => net.balance(w).balance), paid);
  assert.equal(net.totals().issued, issued);
  // Nothing more can be scored or finished; the pending score still ends and refunds its bond.
  net.rejects(
    scoreTx(net, id, "candidate", "retention", 0, scoreProof(net, id, "candidate", "retention", 0)),
    "invalid_transition",
  );
  net.rejects(finishTx(net, id), "invalid_transition");
  net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  const s = (net.app.query(`/evaluation?score=${net.id(late)}`) as JsonObject).state as JsonObject;
  assert.equal(s.status, "settled");
  assert.deepEqual((evaluationAnswer(net).recent as JsonObject[]).map((r) => r.evaluation_id), [id]);
  assert.deepEqual(evaluationAnswer(net).pending_scores as string[], []);
  assert.equal(evaluationAnswer(net).live, null);
});
