import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { bondTx, cons } from "../_fixture.ts";
import { consensusKeyFromSeed } from "../../../ledger/consensus_key.ts";
import { reserveTx } from "../training/_flow.ts";
import { Net, sponsor, stranger } from "../training/_harness.ts";
import { testCohort } from "./_cohort.ts";
import {
  activate,
  dataFacts,
  dataNet,
  nextCohort,
  proposalState,
  proposeTx,
  voters,
  voteTx,
} from "./_net.ts";

const BOND = DEVNET_PARAMS.claim_bond;
const FEE = DEVNET_PARAMS.fee;
const DELAY = DEVNET_PARAMS.activation_blocks;

Deno.test("no reservation before a cohort is activated, neither before nor while one is proposed", () => {
  const net = dataNet();
  assert.match(net.rejects(reserveTx(net), "no_batch"), /no cohort is activated yet/);
  net.ok(proposeTx(net, nextCohort(net, "a")));
  net.rejects(reserveTx(net), "no_batch");
});

Deno.test("2 of 4 equal owners do not activate a proposal; the third yes vote does", () => {
  const net = dataNet();
  const before = net.balance(sponsor).balance;
  const cohort = nextCohort(net, "a");
  const p = proposeTx(net, cohort);
  const proposed = net.height;
  net.ok(p);
  const proposalId = net.id(p);
  assert.equal(net.balance(sponsor).balance, before - FEE - BOND);
  net.ok(voteTx(net, voters[0]!, proposalId), voteTx(net, voters[1]!, proposalId));
  net.until(proposed + DELAY + 3);
  assert.equal(proposalState(net, proposalId).status, "voting");
  assert.equal(dataFacts(net).cohort, null);
  net.ok(voteTx(net, voters[2]!, proposalId));
  const activatedAt = net.height;
  net.block();
  const state = proposalState(net, proposalId);
  assert.equal(state.status, "activated");
  assert.deepEqual(state.votes, voters.slice(0, 3).map((v) => [v.accountId, true]).sort());
  const c = dataFacts(net).cohort as JsonObject;
  assert.equal(c.data_root, cohort.root);
  assert.equal(c.activated, activatedAt);
  assert.equal(c.status, "training");
  assert.equal(c.position, 0);
  assert.equal(net.balance(sponsor).balance, before - FEE);
  const ends = Object.fromEntries(cohort.document.windows.map((w) => [w.source, w.end]));
  assert.deepEqual(dataFacts(net).cursors, ends);
  assert.equal(dataFacts(net).data_root, cohort.root);
  assert.equal(dataFacts(net).proposal, null);
});

Deno.test("an owner with two validators votes once with their summed power; a second vote is refused", () => {
  const validators = [
    { owner: voters[0]!, key: cons[0]! },
    { owner: voters[0]!, key: cons[1]! },
    { owner: voters[1]!, key: cons[2]! },
    { owner: voters[2]!, key: cons[3]! },
  ];
  const net = dataNet({ validators });
  const p = proposeTx(net, nextCohort(net, "a"));
  const proposed = net.height;
  net.ok(p);
  const proposalId = net.id(p);
  const electorate = proposalState(net, proposalId).electorate as [string, number][];
  assert.deepEqual(
    electorate,
    [[voters[0]!.accountId, 8], [voters[1]!.accountId, 4], [voters[2]!.accountId, 4]].sort((a, b) =>
      a[0]! < b[0]! ? -1 : 1
    ),
  );
  net.ok(voteTx(net, voters[0]!, proposalId));
  assert.match(net.rejects(voteTx(net, voters[0]!, proposalId), "already_voted"), /already voted/);
  assert.match(net.rejects(voteTx(net, voters[0]!, proposalId, false), "already_voted"), /already voted/);
  // 8 of 16 is not more than 2/3.
  net.until(proposed + DELAY + 2);
  assert.equal(proposalState(net, proposalId).status, "voting");
  // 8 + 4 = 12 of 16 is.
  net.ok(voteTx(net, voters[1]!, proposalId));
  net.block();
  assert.equal(proposalState(net, proposalId).status, "activated");
});

Deno.test("a vote from outside the electorate, on an unknown proposal or without a boolean is refused", () => {
  const net = dataNet();
  const p = proposeTx(net, nextCohort(net, "a"));
  net.ok(p);
  const proposalId = net.id(p);
  net.rejects(net.tx(stranger, "vote_data", { proposal_id: proposalId, approve: true }), "not_in_electorate");
  net.rejects(
    net.tx(voters[0]!, "vote_data", { proposal_id: "ab".repeat(32), approve: true }),
    "unknown_proposal",
  );
  net.rejects(net.tx(voters[0]!, "vote_data", { proposal_id: proposalId, approve: "yes" }), "invalid_body");
  net.rejects(net.tx(voters[0]!, "vote_data", { proposal_id: proposalId }), "invalid_body");
});

Deno.test("unanimous votes still wait for activation_blocks after the proposal", () => {
  const net = dataNet();
  const p = proposeTx(net, nextCohort(net, "a"));
  const proposed = net.height;
  net.ok(p);
  const proposalId = net.id(p);
  net.ok(...voters.map((v) => voteTx(net, v, proposalId)));
  net.until(proposed + DELAY);
  assert.equal(proposalState(net, proposalId).status, "voting");
  net.block();
  assert.equal(proposalState(net, proposalId).status, "activated");
  assert.equal((dataFacts(net).cohort as JsonObject).activated, proposed + DELAY);
});

Deno.test("a proposal while another is pending or while a cohort trains is cohort_pending", () => {
  const net = dataNet();
  const first = nextCohort(net, "a");
  net.ok(proposeTx(net, first));
  assert.match(net.rejects(proposeTx(net, nextCohort(net, "b")), "cohort_pending"), /is pending/);
  const net2 = dataNet();
  activate(net2, nextCohort(net2, "a"));
  assert.match(net2.rejects(proposeTx(net2, nextCohort(net2, "b")), "cohort_pending"), /still training/);
});

Deno.test("a proposal on a chain without a data lifecycle is refused", () => {
  const net = new Net();
  const cohort = testCohort({
    previous: "d".repeat(64),
    tokenizer_root: "0".repeat(64),
    cursors: {},
    salt: "x",
  });
  net.rejects(proposeTx(net, cohort), "invalid_transition");
});

Deno.test("yes votes that are 2/3 of the snapshot but not of the current electorate do not activate", () => {
  // Epochs of 10 blocks: a bond made with the proposal joins the electorate at height 10.
  const net = dataNet({ consensus: { epoch_blocks: 10 } });
  const newcomer = consensusKeyFromSeed("d9".repeat(32));
  const cohort = nextCohort(net, "a");
  const propose = net.tx(sponsor, "propose_data", { data_root: cohort.root, metadata: cohort.metadata }, 1);
  net.ok(bondTx(sponsor, newcomer, 4_000_000, 0), propose);
  const proposalId = net.id(propose);
  // The snapshot has the four genesis owners only (power 4 each).
  assert.deepEqual((proposalState(net, proposalId).electorate as [string, number][]).map(([, w]) => w), [
    4,
    4,
    4,
    4,
  ]);
  net.until(11);
  const validators = net.app.query("/validators") as {
    validators: { consensus_key: string; power: number }[];
  };
  assert.equal(validators.validators.find((v) => v.consensus_key === newcomer.publicKey)?.power, 16);
  net.ok(...voters.slice(0, 3).map((v) => voteTx(net, v, proposalId)));
  // 12 of 16 in the snapshot, but 12 of 32 now.
  net.until(net.height + DELAY + 3);
  assert.equal(proposalState(net, proposalId).status, "voting");
  assert.equal(dataFacts(net).cohort, null);
});
