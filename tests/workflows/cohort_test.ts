import assert from "node:assert/strict";
import {
  cohort,
  cohortSchedule,
  type CohortState,
  type Electorate,
  hasQuorum,
  isReplayStep,
  proposeData,
  type ProposeInput,
} from "../../workflows/cohort.ts";
import { id } from "../../core/digest.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(cohort);
const ELECTORATE: Electorate = [["alice", 4], ["bob", 3], ["carol", 2], ["dave", 1]];
const TRAIN = [root(1), root(2), root(3), root(4), root(5)];
const POOL = [root(0x11), root(0x12)];
const INPUT: ProposeInput = {
  id: root("a"),
  proposer: "curator",
  data_root: root("d"),
  previous: root("c"),
  electorate: ELECTORATE,
  train_batches: TRAIN,
  replay_pool: POOL,
};

/** Proposed at 100: activation from 103, expires after 160. */
function proposed(input: Partial<ProposeInput> = {}): CohortState {
  const r = proposeData({ ...INPUT, ...input }, env(100));
  assert.ok(r.ok, r.ok ? "" : r.message);
  return r.state;
}

function voted(...votes: [string, boolean][]): CohortState {
  let s = proposed();
  for (const [sender, approve] of votes) s = cov.ok(s, { type: "vote", sender, approve }, env(101));
  return s;
}

const tick = (current: Electorate = ELECTORATE, busy = false) => ({ type: "tick", current, busy }) as const;

Deno.test("replay steps are spread evenly: step i replays when floor((i+1)r/steps) > floor(ir/steps)", () => {
  const steps = (n: number, r: number) =>
    Array.from({ length: n }, (_, i) => i).filter((i) => isReplayStep(i, r, n));
  assert.deepEqual(steps(4, 1), [3]);
  assert.deepEqual(steps(10, 2), [4, 9]);
  assert.deepEqual(steps(7, 1), [6]);
  assert.deepEqual(steps(1, 0), []);
  assert.deepEqual(steps(64, 16), Array.from({ length: 16 }, (_, k) => 4 * k + 3));
});

Deno.test("the schedule ranks fresh and replay batches by their ids under the new data root", () => {
  const d = root("d");
  const byRank = (tag: string, list: string[]) =>
    [...list].sort((a, b) => (id([d, tag, a]) < id([d, tag, b]) ? -1 : 1));
  const fresh = byRank("fresh", TRAIN);
  const replay = byRank("replay", POOL);
  assert.deepEqual(cohortSchedule(d, TRAIN, POOL, 4), [
    { batch: fresh[0], kind: "fresh" },
    { batch: fresh[1], kind: "fresh" },
    { batch: fresh[2], kind: "fresh" },
    { batch: replay[0], kind: "replay" },
  ]);
  // The ranking is not the input order, so the test would notice a schedule that ignores it.
  assert.notDeepEqual(fresh.slice(0, 3), TRAIN.slice(0, 3));
  // Without a previous cohort every step is fresh; a small pool caps the replay count.
  assert.deepEqual(cohortSchedule(d, TRAIN, null, 4).map((s) => s.kind), [
    "fresh",
    "fresh",
    "fresh",
    "fresh",
  ]);
  assert.deepEqual(
    cohortSchedule(d, [...TRAIN, root(6), root(7)], [POOL[0]!], 8).map((s) => s.kind).join(","),
    [
      "fresh,fresh,fresh,fresh,fresh,fresh,fresh,replay",
    ].join(),
  );
  assert.throws(() => cohortSchedule(d, TRAIN.slice(0, 2), POOL, 4), /2 fresh batches, 3 needed/);
});

Deno.test("quorum needs strictly more than two thirds of the power", () => {
  const three: Electorate = [["a", 1], ["b", 1], ["c", 1]];
  assert.equal(hasQuorum(three, [["a", true], ["b", true]]), false); // exactly 2/3
  assert.equal(hasQuorum(three, [["a", true], ["b", true], ["c", true]]), true);
  assert.equal(hasQuorum(three, [["a", true], ["b", true], ["c", false]]), false);
  assert.equal(hasQuorum(ELECTORATE, [["alice", true], ["carol", true]]), false); // 6 of 10
  assert.equal(hasQuorum(ELECTORATE, [["alice", true], ["bob", true]]), true); // 7 of 10
  assert.equal(hasQuorum(ELECTORATE, [["alice", true], ["bob", true], ["dave", true]]), true); // 8 of 10
  assert.equal(hasQuorum([["a", 2 ** 52], ["b", 2 ** 52], ["c", 1]], [["a", true], ["b", true]]), true);
  assert.equal(hasQuorum([], []), false);
});

Deno.test("propose_data locks claim_bond and snapshots the electorate", () => {
  const s = proposed();
  assert.equal(s.status, "proposed");
  assert.deepEqual(
    [s.bond, s.proposed, s.expires, s.votes, s.electorate, s.moves],
    [20_000_000, 100, 160, [], ELECTORATE, [{ op: "lock", account: "curator", amount: 20_000_000 }]],
  );
});

Deno.test("propose_data is rejected for a bad root, a bad electorate, repeated or too few batches", () => {
  const cases: Partial<ProposeInput>[] = [
    { data_root: "x" },
    { replay_pool: ["y"] },
    { electorate: [] },
    { electorate: [["bob", 1], ["alice", 1]] },
    { electorate: [["alice", 1], ["alice", 1]] },
    { electorate: [["alice", 0]] },
    { train_batches: [root(1), root(1), root(2)] },
    { train_batches: [root(1), root(2)] },
    { train_batches: [root(1), root(2), root(3)], replay_pool: null },
  ];
  for (const c of cases) {
    const r = proposeData({ ...INPUT, ...c }, env(1));
    assert.equal(r.ok ? "ok" : r.code, "invalid_proposal", JSON.stringify(c));
  }
});

Deno.test("one vote per owner of the snapshot electorate, never changed, until expiry", () => {
  const s = cov.ok(proposed(), { type: "vote", sender: "bob", approve: false }, env(101));
  assert.equal(s.status, "voting");
  assert.deepEqual(s.votes, [["bob", false]]);
  cov.rejects(s, { type: "vote", sender: "bob", approve: true }, env(102), "already_voted");
  cov.rejects(s, { type: "vote", sender: "bob", approve: false }, env(102), "already_voted");
  cov.rejects(s, { type: "vote", sender: "erin", approve: true }, env(102), "not_in_electorate");
  cov.rejects(s, { type: "vote", sender: "alice", approve: true }, env(161), "expired");
  const two = cov.ok(s, { type: "vote", sender: "alice", approve: true }, env(160));
  assert.deepEqual(two.votes, [["alice", true], ["bob", false]]);
});

Deno.test("activation waits for activation_blocks, a quorum of both electorates and no live work", () => {
  const s = voted(["alice", true], ["bob", true], ["dave", true]);
  cov.rejects(s, tick(), env(102), "invalid_transition");
  cov.rejects(s, tick(ELECTORATE, true), env(103), "invalid_transition");
  // bob's power moved to a new owner: yes is 5 of 10 in the current electorate.
  cov.rejects(
    s,
    tick([["alice", 4], ["carol", 2], ["dave", 1], ["erin", 3]]),
    env(103),
    "invalid_transition",
  );
  cov.rejects(s, tick([]), env(103), "bad_request");
  cov.rejects(voted(["alice", true], ["carol", true]), tick(), env(103), "invalid_transition");
  cov.rejects(proposed(), tick(), env(103), "invalid_transition");
  const a = cov.ok(s, tick(), env(103));
  assert.equal(a.status, "activated");
  if (a.status !== "activated") return;
  assert.deepEqual(a.moves, [{ op: "release", account: "curator", amount: 20_000_000 }]);
  assert.deepEqual(a.schedule, cohortSchedule(root("d"), TRAIN, POOL, 4));
  assert.equal(a.schedule.length, 4);
  // A current electorate that grew with a yes-voter's power still activates.
  assert.equal(
    cov.ok(s, tick([["alice", 8], ["bob", 3], ["carol", 2], ["dave", 1]]), env(103)).status,
    "activated",
  );
});

Deno.test("a proposal past expires refunds 90% and burns 10%", () => {
  for (const s of [proposed(), voted(["carol", true])]) {
    cov.rejects(s, tick(), env(160), "invalid_transition");
    const e = cov.ok(s, tick(), env(161));
    assert.equal(e.status, "expired");
    assert.deepEqual(e.moves, [{ op: "release", account: "curator", amount: 18_000_000 }, {
      op: "burn",
      amount: 2_000_000,
    }]);
    cov.rejects(e, tick(), env(200), "invalid_transition");
    cov.rejects(e, { type: "vote", sender: "alice", approve: true }, env(200), "invalid_transition");
  }
  const a = cov.ok(voted(["alice", true], ["bob", true], ["dave", true]), tick(), env(103));
  cov.rejects(a, { type: "vote", sender: "carol", approve: true }, env(104), "invalid_transition");
});

Deno.test("every declared cohort edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
