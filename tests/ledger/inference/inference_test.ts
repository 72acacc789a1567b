import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { keyedById, uploadChunks } from "../../../ledger/training/wire.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { slashSplit } from "../../../workflows/money.ts";
import { MAX_LIVE_JOBS, MAX_RETAINED_JOBS } from "../../../ledger/inference/store.ts";
import { reserveAndClaim, uploadAndSeal } from "../training/_flow.ts";
import { trainingWriter } from "../../../ledger/training/store.ts";
import { challenger, sponsor, workers } from "../training/_harness.ts";
import {
  forgedTokens,
  inferenceNet,
  inferTx,
  job,
  jobState,
  prove,
  provider,
  referee,
  refute,
  requester,
  respondTx,
  stranger,
} from "./_inference.ts";

const FEE = DEVNET_PARAMS.fee;
const PRICE = DEVNET_PARAMS.price_per_token;
const BOND = DEVNET_PARAMS.provider_bond;
const WINDOW = DEVNET_PARAMS.challenge_blocks;

Deno.test("infer escrows max_price; an unchallenged response pays tokens × price and refunds the rest, minting nothing", () => {
  const net = inferenceNet();
  const r0 = net.balance(requester).balance, p0 = net.balance(provider).balance;
  const issued = net.totals().issued;
  const infer = inferTx(net, { max_price: 1_000 });
  net.ok(infer);
  const jobId = net.id(infer);
  assert.equal(net.balance(requester).balance, r0 - FEE - 1_000);
  assert.equal(job(net, jobId).escrow, 1_000);
  assert.equal(jobState(net, jobId).status, "requested");
  const proof = prove([1, 2, 3, 4], 4);
  assert.deepEqual(proof.record.tokens, [4082, 4082, 4082, 4082]);
  const respond = respondTx(net, jobId, proof);
  const h = net.height;
  net.ok(respond);
  assert.equal(job(net, jobId).escrow, 1_000 + BOND);
  assert.equal(net.balance(provider).balance, p0 - FEE - BOND);
  assert.equal(jobState(net, jobId).status, "responded");
  net.until(h + WINDOW); // the window closes after h + WINDOW: still pending at that height
  net.block();
  assert.equal(jobState(net, jobId).status, "responded");
  net.block();
  const s = jobState(net, jobId);
  assert.equal(s.status, "settled");
  assert.equal(job(net, jobId).escrow, 0);
  assert.equal(job(net, jobId).live, false);
  assert.equal(net.balance(provider).balance, p0 - FEE + 4 * PRICE);
  assert.equal(net.balance(requester).balance, r0 - FEE - 4 * PRICE);
  assert.equal(net.totals().issued, issued);
  // The settled job is still answered, with its record.
  const meta = job(net, jobId).metadata as JsonObject;
  assert.deepEqual((meta[proof.recordRoot] as JsonObject).tokens, [4082, 4082, 4082, 4082]);
  assert.deepEqual((net.app.query("/inference") as JsonObject).jobs, []);
});

Deno.test("a generation that stops at EOS is paid for the tokens it produced", () => {
  const net = inferenceNet();
  const r0 = net.balance(requester).balance, p0 = net.balance(provider).balance;
  const infer = inferTx(net, { prompt_ids: [10, 20, 30], max_tokens: 8, max_price: 2_000 });
  net.ok(infer);
  const jobId = net.id(infer);
  const proof = prove([10, 20, 30], 8);
  assert.deepEqual(proof.record.tokens, [30]);
  assert.equal(proof.record.stop, "eos");
  net.ok(respondTx(net, jobId, proof));
  net.until(net.height + WINDOW + 1);
  assert.equal(jobState(net, jobId).status, "settled");
  assert.equal(net.balance(provider).balance, p0 - FEE + PRICE);
  assert.equal(net.balance(requester).balance, r0 - FEE - PRICE);
});

Deno.test("a forged token is refuted through the head: the provider is slashed and unpaid, the job reopens and an honest retry settles", () => {
  const net = inferenceNet();
  const r0 = net.balance(requester).balance,
    p0 = net.balance(provider).balance,
    c0 = net.balance(referee).balance;
  const issued = net.totals().issued;
  const infer = inferTx(net, { max_price: 1_000, expires_in: 60 });
  net.ok(infer);
  const jobId = net.id(infer);
  const forged = prove([1, 2, 3, 4], 4, forgedTokens([1, 2, 3, 4], 4, 5));
  assert.equal(forged.record.tokens[0], 5);
  const respond = respondTx(net, jobId, forged);
  net.ok(respond);
  const claimId = net.id(respond);
  const stages = (jobState(net, jobId).claim as JsonObject).stages as number;
  assert.equal(stages, 3); // two partitions and the head
  const needed = refute(net, jobId, claimId, 2);
  assert.equal(needed.length, 3); // embedding, final norm, final hidden state
  // A partition of the forged answer replays as a match, so only the head decides.
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  const s = jobState(net, jobId);
  assert.equal(s.status, "refuted");
  assert.equal(s.reason, "mismatch: generated token");
  const split = slashSplit(BOND);
  assert.equal(net.balance(provider).balance, p0 - FEE - BOND);
  // The challenge, then per object its upload chunks and one seal.
  const chunks = needed.reduce((n, r) => n + uploadChunks(net.objects.get(r)!).length + 1, 0);
  const spent = FEE * (1 + chunks);
  assert.equal(net.balance(referee).balance, c0 - spent + split.challenger);
  net.block();
  assert.equal(jobState(net, jobId).status, "reopened");
  assert.equal(job(net, jobId).escrow, 1_000);
  // The honest retry.
  const honest = prove([1, 2, 3, 4], 4);
  const h = net.height;
  net.ok(respondTx(net, jobId, honest));
  net.until(h + WINDOW + 2);
  assert.equal(jobState(net, jobId).status, "settled");
  const claims = job(net, jobId).claims as string[];
  assert.equal(claims.length, 2);
  assert.equal(claims[0], claimId);
  assert.equal(net.balance(provider).balance, p0 - FEE - BOND - FEE + 4 * PRICE);
  assert.equal(net.balance(requester).balance, r0 - FEE - 4 * PRICE);
  assert.equal(net.totals().issued, issued);
});

Deno.test("an unanswered job refunds its escrow, not the fee, at the first block past its deadline; a late respond is refused", () => {
  const net = inferenceNet();
  const r0 = net.balance(requester).balance;
  const infer = inferTx(net, { expires_in: 12 });
  const h = net.height;
  net.ok(infer);
  const jobId = net.id(infer);
  const expires = h + 12;
  assert.equal((jobState(net, jobId).job as JsonObject).expires, expires);
  // Responses close at expires − challenge_blocks.
  net.until(expires - WINDOW);
  const late = respondTx(net, jobId, prove([1, 2, 3, 4], 4));
  assert.match(net.rejects(late, "expired"), /responses close at/);
  net.until(expires);
  net.block(); // height = expires: not yet past it
  assert.equal(jobState(net, jobId).status, "requested");
  assert.equal(net.balance(requester).balance, r0 - FEE - 1_000);
  net.block(); // expires + 1
  assert.equal(jobState(net, jobId).status, "expired");
  assert.equal(net.balance(requester).balance, r0 - FEE);
  assert.equal(job(net, jobId).escrow, 0);
});

Deno.test("respond is refused with the state unchanged: another key, an unknown job, twice, no stop at EOS, tokens that are not the record's, after the deadline", () => {
  const net = inferenceNet();
  const infer = inferTx(net, { prompt_ids: [10, 20, 30], max_tokens: 4 });
  net.ok(infer);
  const jobId = net.id(infer);
  const honest = prove([10, 20, 30], 4);
  assert.match(net.rejects(respondTx(net, jobId, honest, workers[1]!), "not_owner"), /provider is/);
  assert.match(net.rejects(respondTx(net, "ab".repeat(32), honest), "unknown_job"), /no inference job/);
  // Generation that goes on after EOS (30, 30, 30, 30 with stop "limit").
  const late = prove([10, 20, 30], 4, [30, 30, 30, 30]);
  assert.match(net.rejects(respondTx(net, jobId, late), "invalid_record"), /late stop/);
  // A record whose head commits other tokens than the record's.
  const head = { ...honest.head, argmax: [31] };
  const record = { ...honest.record, head: id(head as unknown as JsonValue) };
  const values = [record, ...honest.traces, head] as unknown as JsonValue[];
  const swapped = net.tx(provider, "respond", {
    job_id: jobId,
    record_root: id(record as unknown as JsonValue),
    metadata: keyedById(values),
  });
  assert.match(net.rejects(swapped, "invalid_record"), /argmax is not the record's tokens/);
  // A respond whose record answers another prompt.
  const other = prove([10, 20, 31], 4);
  assert.match(net.rejects(respondTx(net, jobId, other), "invalid_record"), /prompt_ids/);
  net.ok(respondTx(net, jobId, honest));
  assert.match(net.rejects(respondTx(net, jobId, honest), "busy"), /is pending/);
  net.until(net.height + WINDOW + 1);
  assert.equal(jobState(net, jobId).status, "settled");
  assert.match(net.rejects(respondTx(net, jobId, honest), "invalid_transition"), /settled/);
});

Deno.test("infer is refused with the state unchanged: 1 or 193 prompt ids, an id at the vocabulary, a low price cap, a 17th live job, no funds, a stale root", () => {
  const net = inferenceNet();
  assert.match(net.rejects(inferTx(net, { prompt_ids: [1] }), "invalid_inference"), /1 prompt ids/);
  const long = Array.from({ length: 193 }, (_, i) => i);
  assert.match(net.rejects(inferTx(net, { prompt_ids: long }), "invalid_inference"), /193 prompt ids/);
  assert.match(
    net.rejects(inferTx(net, { prompt_ids: [1, 4096] }), "invalid_inference"),
    /below the vocabulary/,
  );
  assert.match(net.rejects(inferTx(net, { max_tokens: 9 }), "invalid_inference"), /max_tokens is 9/);
  assert.match(
    net.rejects(inferTx(net, { max_tokens: 4, max_price: 399 }), "invalid_inference"),
    /at least 400/,
  );
  assert.match(net.rejects(inferTx(net, { expires_in: 9 }), "invalid_inference"), /expires_in is 9/);
  assert.match(net.rejects(inferTx(net, { expires_in: 201 }), "invalid_inference"), /expires_in is 201/);
  assert.match(net.rejects(inferTx(net, { provider: "xyz" }), "invalid_inference"), /provider/);
  assert.match(net.rejects(inferTx(net, { model_root: "cd".repeat(32) }), "wrong_model"), /serving root/);
  const poor = net.balance(stranger).balance;
  assert.match(
    net.rejects(inferTx(net, { max_price: poor }, stranger), "insufficient_funds"),
    new RegExp(`balance after fee is ${poor - FEE}`),
  );
  const many = Array.from({ length: MAX_LIVE_JOBS }, (_, i) => inferTx(net, {}, sponsor, i));
  net.ok(...many);
  assert.equal(((net.app.query("/inference") as JsonObject).jobs as unknown[]).length, 16);
  assert.match(net.rejects(inferTx(net, {}, challenger), "busy"), /16 jobs are live/);
});

Deno.test("an availability challenge on a response is answered by the provider's upload; the response then settles", () => {
  const net = inferenceNet();
  const infer = inferTx(net);
  net.ok(infer);
  const jobId = net.id(infer);
  const proof = prove([1, 2, 3, 4], 4);
  const respond = respondTx(net, jobId, proof);
  net.ok(respond);
  const claimId = net.id(respond);
  const c0 = net.balance(referee).balance;
  const object = proof.traces[0]!.output;
  // A component is not something the response committed: only its activations can be asked for.
  const bad = net.tx(referee, "challenge", {
    claim_id: claimId,
    stage: 0,
    challenge_kind: "availability",
    object_root: "ef".repeat(32),
    block: null,
    phase: null,
  });
  net.rejects(bad, "invalid_challenge");
  net.ok(
    net.tx(referee, "challenge", {
      claim_id: claimId,
      stage: 0,
      challenge_kind: "availability",
      object_root: object,
      block: null,
      phase: null,
    }),
  );
  assert.equal(net.balance(referee).balance, c0 - FEE - DEVNET_PARAMS.challenge_bond);
  uploadAndSeal(net, claimId, object, provider);
  assert.equal(net.balance(referee).balance, c0 - FEE);
  assert.equal((jobState(net, jobId).claim as JsonObject).challenge, null);
  assert.equal(net.app.query(`/object/${object}`) !== null, true);
  net.until(net.height + WINDOW + 1);
  assert.equal(jobState(net, jobId).status, "settled");
});

Deno.test("/inference lists live jobs by provider; ended jobs are kept up to the bound and pruned oldest first", () => {
  const net = inferenceNet();
  const mine = inferTx(net, {}, sponsor, 0);
  const theirs = inferTx(net, { provider: workers[1]!.accountId }, sponsor, 1);
  net.ok(mine, theirs);
  const listed = net.app.query(`/inference?provider=${provider.accountId}`) as JsonObject;
  assert.deepEqual((listed.jobs as JsonObject[]).map((j) => j.job_id), [net.id(mine)]);
  assert.equal(net.app.query("/inference?id=zz"), null);
  // 257 jobs expire unanswered: the first ended ones are pruned so that 256 remain.
  const ids = [net.id(mine), net.id(theirs)];
  let left = MAX_RETAINED_JOBS + 1 - 2;
  net.until(net.height + 40);
  while (left > 0) {
    const n = Math.min(left, MAX_LIVE_JOBS);
    const txs = Array.from({ length: n }, (_, i) => inferTx(net, { expires_in: 10 }, sponsor, i));
    net.ok(...txs);
    ids.push(...txs.map((t) => net.id(t)));
    net.until(net.height + 11);
    left -= n;
  }
  net.block();
  assert.equal(ids.length, MAX_RETAINED_JOBS + 1);
  // Both first jobs ended at the same height: the smaller job id goes first.
  const [first, second] = [ids[0]!, ids[1]!].sort();
  assert.equal(net.app.query(`/inference?id=${first}`), null);
  assert.equal((job(net, second!).state as JsonObject).status, "expired");
  assert.equal((job(net, ids[MAX_RETAINED_JOBS]!).state as JsonObject).status, "expired");
});

Deno.test("a pending job keeps the model it was bought for after a promotion; new requests must name the new serving root", () => {
  let promote = false;
  const net = inferenceNet({}, undefined, {
    // Stands in for an evaluation's promotion: the serving root becomes the learning root at one block.
    afterTransactions: (state) => {
      if (!promote) return;
      promote = false;
      const t = trainingWriter(state);
      const l = t.lifecycle()!;
      t.setLifecycle({ ...l, serving_root: l.learning_root });
    },
  });
  const genesisRoot = net.lifecycle().serving_root as string;
  const infer = inferTx(net, { expires_in: 120 });
  net.ok(infer);
  const jobId = net.id(infer);
  // One training step settles, then the promotion moves the serving root to its model.
  reserveAndClaim(net);
  net.until(net.height + WINDOW + 1);
  const trained = net.lifecycle().learning_root as string;
  assert.notEqual(trained, genesisRoot);
  promote = true;
  net.block();
  assert.equal(net.lifecycle().serving_root, trained);
  // The old job is answered with the genesis model and settles; a new request for the old model is refused.
  assert.match(net.rejects(inferTx(net, { model_root: genesisRoot }), "wrong_model"), /serving root is/);
  const p0 = net.balance(provider).balance;
  net.ok(respondTx(net, jobId, prove([1, 2, 3, 4], 4)));
  net.until(net.height + WINDOW + 1);
  assert.equal(jobState(net, jobId).status, "settled");
  assert.equal(net.balance(provider).balance, p0 - FEE + 4 * PRICE);
  net.ok(inferTx(net, { model_root: trained }));
});
