import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id, sha256Hex } from "../../../core/digest.ts";
import { readValue, writeValue } from "../../../kernels/safetensors.ts";
import type { ScoreProof } from "../../../kernels/score_record.ts";
import { slashSplit } from "../../../workflows/money.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { uploadAndSeal } from "../training/_flow.ts";
import { challenger, type Net, sponsor } from "../training/_harness.ts";
import { evaluationAnswer, modelAt, open, scoreProof, scoreTx, trainedNet } from "./_eval.ts";

function scoreState(net: Net, claimId: string): JsonObject {
  return (net.app.query(`/evaluation?score=${claimId}`) as JsonObject).state as JsonObject;
}

/** A fraud challenge of `stage` by the challenger, every needed object uploaded and sealed; the needed roots. */
function challengeAndSeal(net: Net, claimId: string, stage: number): string[] {
  net.ok(
    net.tx(challenger, "challenge", {
      claim_id: claimId,
      stage,
      challenge_kind: "fraud",
      object_root: null,
      block: null,
      phase: null,
    }),
  );
  const needed = ((scoreState(net, claimId).claim as JsonObject).challenge as JsonObject).needed as string[];
  for (const root of needed) uploadAndSeal(net, claimId, root, challenger);
  return needed;
}

/** Partition 0's output nudged and partition 1 fed the nudged activation; the head left as committed. */
function forgedPartition(p: ScoreProof, C: number): ScoreProof {
  const B = p.record.windows.length;
  const bytes0 = p.objects.get(p.traces[0]!.output)!;
  const t = readValue(bytes0, [B, bytes0.length / 4 / B / C | 0, C]);
  const T = t.shape[1]!;
  const shaped = readValue(bytes0, [B, T, C]);
  shaped.data[3] = shaped.data[3]! + 0.5;
  const bytes = writeValue(shaped);
  const root = sha256Hex(bytes);
  const traces = [{ ...p.traces[0]!, output: root }, { ...p.traces[1]!, input: root }];
  const record = { ...p.record, traces: traces.map((x) => id(x as unknown as JsonValue)) };
  return {
    ...p,
    record,
    recordRoot: id(record as unknown as JsonValue),
    traces,
    objects: new Map([...p.objects, [root, bytes]]),
  };
}

function refuteAndRetry(
  net: Net,
  evaluationId: string,
  forged: ScoreProof,
  stage: number,
  what: string,
): void {
  const tx = scoreTx(net, evaluationId, "candidate", "fresh", 0, forged);
  net.ok(tx);
  const claimId = net.id(tx);
  const sponsorBefore = net.balance(sponsor).balance, challengerBefore = net.balance(challenger);
  const issued = net.totals().issued;
  challengeAndSeal(net, claimId, stage);
  net.ok(net.tx(challenger, "resolve", { claim_id: claimId }));
  const s = scoreState(net, claimId);
  assert.equal(s.status, "rejected");
  assert.equal(s.reason, `mismatch: ${what}`);
  const split = slashSplit(DEVNET_PARAMS.claim_bond);
  // Every challenge, upload, seal and resolve paid its fee; the challenger's bond came back with half the claim bond.
  const fees = (net.balance(challenger).nonce - challengerBefore.nonce) * DEVNET_PARAMS.fee;
  assert.equal(net.balance(sponsor).balance, sponsorBefore, "the claimant's bond is gone");
  assert.equal(net.balance(challenger).balance, challengerBefore.balance - fees + split.challenger);
  assert.equal(net.totals().issued, issued, "nothing is minted");
  // The window reopens: the group has nothing settled and nothing pending, and an honest score at offset 0 settles.
  const g = () => (evaluationAnswer(net, evaluationId).groups as Record<string, JsonObject>).candidate_fresh;
  assert.deepEqual(g(), { settled: 0, total: 32, pending: null });
  const honest = scoreProof(net, evaluationId, "candidate", "fresh", 0);
  net.ok(scoreTx(net, evaluationId, "candidate", "fresh", 0, honest));
  net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  assert.deepEqual(g(), { settled: 4, total: 32, pending: null });
  const m = ((evaluationAnswer(net, evaluationId).measurements as JsonObject).candidate as JsonObject)
    .fresh as JsonObject[];
  assert.deepEqual(m.map((x) => x.loss), honest.head.losses);
}

Deno.test("a forged head loss is refuted from the embedding, the final norm and the hidden state alone", () => {
  const { net } = trainedNet();
  const evaluationId = open(net);
  const forged = scoreProof(
    net,
    evaluationId,
    "candidate",
    "fresh",
    0,
    (_s, _r, w) => (w === 1 ? 0.5 : null),
  );
  const e = evaluationAnswer(net, evaluationId);
  const { manifest } = modelAt(net, e.candidate as string);
  const tx = scoreTx(net, evaluationId, "candidate", "fresh", 0, forged);
  // The head-only dispute: stage 2 (after two partitions) needs no transformer block.
  net.ok(tx);
  net.ok(
    net.tx(challenger, "challenge", {
      claim_id: net.id(tx),
      stage: 2,
      challenge_kind: "fraud",
      object_root: null,
      block: null,
      phase: null,
    }),
  );
  const needed = ((scoreState(net, net.id(tx)).claim as JsonObject).challenge as JsonObject)
    .needed as string[];
  assert.deepEqual(needed, [manifest.components.embed!, manifest.components.norm!, forged.head.input].sort());
  // A fresh ledger for the whole refutation.
  const again = trainedNet().net;
  const id2 = open(again);
  refuteAndRetry(
    again,
    id2,
    scoreProof(again, id2, "candidate", "fresh", 0, (_s, _r, w) => (w === 1 ? 0.5 : null)),
    2,
    "window loss",
  );
});

Deno.test("a forged forward partition is refuted from that partition's sealed inputs", () => {
  const { net } = trainedNet();
  const evaluationId = open(net);
  const honest = scoreProof(net, evaluationId, "candidate", "fresh", 0);
  const C = modelAt(net, evaluationAnswer(net, evaluationId).candidate as string).model.config.hidden_size;
  refuteAndRetry(net, evaluationId, forgedPartition(honest, C), 0, "forward output");
});

Deno.test("an honest score survives a fraud challenge: the challenger's bond is burned and the score settles", () => {
  const { net } = trainedNet();
  const evaluationId = open(net);
  const honest = scoreProof(net, evaluationId, "baseline", "retention", 0);
  const tx = scoreTx(net, evaluationId, "baseline", "retention", 0, honest);
  net.ok(tx);
  const burned = net.totals().burned;
  challengeAndSeal(net, net.id(tx), 2);
  net.ok(net.tx(challenger, "resolve", { claim_id: net.id(tx) }));
  assert.equal(net.totals().burned - burned >= DEVNET_PARAMS.challenge_bond, true);
  assert.equal((scoreState(net, net.id(tx)).claim as JsonObject).challenge, null);
  net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  assert.equal(scoreState(net, net.id(tx)).status, "settled");
});
