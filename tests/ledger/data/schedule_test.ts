import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { place } from "../../../kernels/placement.ts";
import { cohortSchedule, isReplayStep } from "../../../workflows/cohort.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { challengeAndUpload, grown, growTx, reserveAndClaim, reserveTx } from "../training/_flow.ts";
import { challenger, type Net, stranger } from "../training/_harness.ts";
import type { TestCohort } from "./_cohort.ts";
import { activate, dataFacts, dataNet, nextCohort, proposeTx } from "./_net.ts";

function trainBatches(c: TestCohort): string[] {
  return c.document.documents.filter((d) => d.role === "train").flatMap((d) => d.batches);
}

/** Reserves, claims and lets the claim settle unchallenged; the assignment it reserved. */
function step(net: Net, partitions?: string[][]): JsonObject {
  const { height } = reserveAndClaim(net, partitions ? { partitions } : {});
  const claim = net.lifecycle().claim as JsonObject;
  const assignment = (claim.state as JsonObject).assignment as JsonObject;
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  assert.equal(net.lifecycle().claim, null, "the claim settled");
  return assignment;
}

Deno.test("reserve binds each scheduled batch in order and training stops after the cohort's steps", () => {
  const net = dataNet();
  const cohort = nextCohort(net, "a");
  activate(net, cohort);
  const steps = DEVNET_PARAMS.steps_per_cohort;
  const data = net.app.query("/data") as JsonObject;
  const expected = cohortSchedule(cohort.root, trainBatches(cohort), null, steps);
  assert.deepEqual(data.schedule, expected);
  assert.deepEqual(data.batches, expected.map((s) => cohort.batches.get(s.batch)));
  assert.equal(expected.every((s) => s.kind === "fresh"), true);
  const round0 = net.lifecycle().training_round as number;
  for (let i = 0; i < steps; i++) {
    const a = step(net);
    assert.deepEqual([a.data_root, a.sequence_index, a.batch], [cohort.root, i, expected[i]!.batch]);
    assert.equal((dataFacts(net).cohort as JsonObject).position, i + 1);
  }
  assert.equal(net.lifecycle().training_round, round0 + steps);
  const c = dataFacts(net).cohort as JsonObject;
  assert.equal(c.status, "trained");
  assert.match(net.rejects(reserveTx(net), "no_batch"), /is trained at step 4 of 4/);
  // A trained cohort no longer blocks the next proposal.
  net.ok(proposeTx(net, nextCohort(net, "b")));
});

Deno.test("the second cohort replays floor(steps/4) batches of the first cohort's pool at the spread positions", () => {
  const steps = 8;
  const net = dataNet({ params: { steps_per_cohort: steps }, trainingBlocks: 5 });
  const first = nextCohort(net, "a", { train: 10 });
  activate(net, first);
  const firstCursors = dataFacts(net).cursors as Record<string, number>;
  assert.deepEqual(firstCursors, Object.fromEntries(first.document.windows.map((w) => [w.source, w.end])));
  net.until((dataFacts(net).cohort as JsonObject).deadline as number + 2);
  const second = nextCohort(net, "b", { train: 9 });
  assert.deepEqual(second.document.windows.map((w) => w.start), [
    firstCursors["chat-retention"],
    firstCursors["chat-train"],
  ]);
  activate(net, second);
  const schedule = (net.app.query("/data") as JsonObject).schedule as { batch: string; kind: string }[];
  const r = Math.floor(steps / 4);
  const replayAt = schedule.flatMap((s, i) => (s.kind === "replay" ? [i] : []));
  assert.deepEqual(replayAt, [3, 7]);
  assert.deepEqual(replayAt, [...Array(steps).keys()].filter((i) => isReplayStep(i, r, steps)));
  const pool = trainBatches(first);
  for (const i of replayAt) assert.ok(pool.includes(schedule[i]!.batch), `step ${i} replays the first pool`);
  assert.deepEqual(schedule, cohortSchedule(second.root, trainBatches(second), pool, steps));
  assert.deepEqual(
    dataFacts(net).cursors,
    Object.fromEntries(second.document.windows.map((w) => [w.source, w.end])),
  );
});

Deno.test("growth is allowed only before the first step of an active cohort", () => {
  const net = dataNet();
  net.rejects(growTx(net, grown(net, 1)), "invalid_transition");
  activate(net, nextCohort(net, "a"));
  const h = net.height;
  net.ok(growTx(net, grown(net, 1)));
  net.until(h + DEVNET_PARAMS.challenge_blocks + 2);
  assert.equal(net.lifecycle().claim, null);
  step(net, place({ ...PRESETS.devnet, num_hidden_layers: 5 }, [700_000, 2_000_000]));
  assert.match(net.rejects(growTx(net, grown(net, 1)), "invalid_transition"), /before its first step/);
});

Deno.test("a cohort past its training deadline closes: the learning root returns to serving, paid work stays", () => {
  const net = dataNet({ trainingBlocks: 25 });
  const cohort = nextCohort(net, "a");
  activate(net, cohort);
  const serving = net.lifecycle().serving_root;
  const { height, claimId } = reserveAndClaim(net);
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  const trained = net.lifecycle();
  assert.notEqual(trained.learning_root, serving);
  assert.equal(trained.period && (trained.period as JsonObject).steps, 1);
  const deadline = (dataFacts(net).cohort as JsonObject).deadline as number;
  net.until(deadline + 1);
  assert.equal((dataFacts(net).cohort as JsonObject).status, "training");
  net.block();
  const c = dataFacts(net).cohort as JsonObject;
  assert.equal(c.status, "closed");
  assert.equal(c.ended, deadline + 1);
  assert.equal(net.lifecycle().learning_root, serving);
  assert.equal(net.lifecycle().training_round, trained.training_round);
  assert.match(net.rejects(reserveTx(net), "no_batch"), /is closed at step 1 of 4/);
  const settled = net.app.query(`/claim?id=${claimId}`) as JsonObject;
  const identity = ((settled.state as JsonObject).work as JsonObject).work_identity;
  assert.equal((settled.state as JsonObject).status, "settled");
  assert.deepEqual(net.app.query(`/work?identity=${identity}`), { identity, paid: true, claim_id: claimId });
  // Consumed ids stay consumed: a cohort reusing one is refused.
  const again = nextCohort(net, "b", {}, (e) => (e.find((d) => d.role === "train")!.id = trainedId(cohort)));
  net.rejects(proposeTx(net, again), "document_reused");
});

function trainedId(c: TestCohort): string {
  return c.document.documents.find((d) => d.role === "train")!.id;
}

Deno.test("a claim reserved before the deadline still settles and is paid; the cohort closes once it has", () => {
  const net = dataNet({ trainingBlocks: 4 });
  activate(net, nextCohort(net, "a"));
  const serving = net.lifecycle().serving_root;
  const deadline = (dataFacts(net).cohort as JsonObject).deadline as number;
  const { height, claimId } = reserveAndClaim(net);
  assert.ok(height <= deadline);
  net.until(deadline + 3);
  // Past the deadline with the claim still pending: the cohort waits for it.
  assert.equal((dataFacts(net).cohort as JsonObject).status, "training");
  assert.notEqual(net.lifecycle().claim, null);
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  const settled = net.app.query(`/claim?id=${claimId}`) as JsonObject;
  assert.equal((settled.state as JsonObject).status, "settled");
  const c = dataFacts(net).cohort as JsonObject;
  assert.deepEqual([c.status, c.position, c.ended], [
    "closed",
    1,
    height + DEVNET_PARAMS.challenge_blocks + 1,
  ]);
  assert.equal(net.lifecycle().learning_root, serving);
  assert.equal(net.lifecycle().training_round, 1);
});

Deno.test("a forged step on a cohort batch is refuted by the ledger's referee, and the same step is reserved again", () => {
  const net = dataNet();
  const cohort = nextCohort(net, "a");
  activate(net, cohort);
  const first = (net.app.query("/data") as JsonObject).schedule as { batch: string }[];
  const { claimId } = reserveAndClaim(net, { forge: { what: "optimizer", stage: 1 } });
  challengeAndUpload(net, claimId, 1, challenger, { block: 3, phase: "update" });
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  const st = (net.app.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
  assert.deepEqual([st.status, st.reason], ["rejected", "mismatch: optimizer update"]);
  assert.equal((dataFacts(net).cohort as JsonObject).position, 0);
  const a = step(net);
  assert.deepEqual([a.sequence_index, a.batch], [0, first[0]!.batch]);
});
