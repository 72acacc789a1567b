import assert from "node:assert/strict";
import { epoch, type EpochEvent, type EpochState, nextAction, startEpoch } from "../../workflows/epoch.ts";
import { stateHash } from "../../workflows/machine.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(epoch);
const E = env(0);

function start(attempts = 3): EpochState {
  const s = startEpoch({ epoch: 7, attempts });
  assert.ok(s.ok);
  return s.state;
}

/** A whole epoch with two steps, the first failing once. */
const JOURNAL: EpochEvent[] = [
  { type: "collected", data_root: root("d"), documents: 96 },
  { type: "proposed", proposal_id: root("a") },
  { type: "activated", steps: 2 },
  { type: "reserved", index: 0, assignment_id: root(1) },
  { type: "step_failed", index: 0, reason: "lease expired" },
  { type: "reserved", index: 0, assignment_id: root(2) },
  { type: "step_settled", index: 0 },
  { type: "reserved", index: 1, assignment_id: root(3) },
  { type: "step_settled", index: 1 },
  { type: "evaluation_opened", evaluation_id: root("e") },
  { type: "evaluation_decided", promoted: true },
];

function run(events: readonly EpochEvent[], from = start()): EpochState[] {
  const out: EpochState[] = [];
  let s = from;
  for (const e of events) {
    s = cov.ok(s, e, E);
    out.push(s);
  }
  return out;
}

Deno.test("an epoch goes collecting → proposing → training → evaluating → decided, with the next action at each step", () => {
  const states = run(JOURNAL);
  assert.deepEqual(
    [nextAction(start()), ...states.map(nextAction)],
    [
      "collect",
      "propose",
      "await_activation",
      "reserve",
      "compute_and_claim",
      "reserve",
      "compute_and_claim",
      "reserve",
      "compute_and_claim",
      "open_evaluation",
      "await_decision",
      "done",
    ],
  );
  assert.deepEqual(states.at(-1), {
    status: "decided",
    epoch: 7,
    attempts_left: 0,
    outcome: "promoted",
    reason: "the gate passed",
  });
});

Deno.test("resuming from any point of the journal reaches the same state hash as running it whole", () => {
  const whole = epoch.replay(start(), JOURNAL.map((event) => ({ event, env: E })));
  assert.ok(whole.ok);
  for (let k = 0; k <= JOURNAL.length; k++) {
    const first = epoch.replay(start(), JOURNAL.slice(0, k).map((event) => ({ event, env: E })));
    assert.ok(first.ok);
    const rest = epoch.replay(first.state, JOURNAL.slice(k).map((event) => ({ event, env: E })));
    assert.ok(rest.ok);
    assert.equal(stateHash(rest.state), stateHash(whole.state));
  }
});

Deno.test("the attempt budget is spent by reservations and a restart cannot replenish it", () => {
  const states = run(JOURNAL.slice(0, 6), start(2));
  const last = states.at(-1)!;
  assert.equal(last.attempts_left, 0);
  // Replaying the same journal after a restart gives the same, spent budget.
  const again = epoch.replay(start(2), JOURNAL.slice(0, 6).map((event) => ({ event, env: E })));
  assert.ok(again.ok);
  assert.equal(again.state.attempts_left, 0);
  // The step fails with no attempts left: the epoch is abandoned.
  const failed = cov.ok(last, { type: "step_failed", index: 0, reason: "challenged" }, E);
  assert.deepEqual(failed, {
    status: "decided",
    epoch: 7,
    attempts_left: 0,
    outcome: "abandoned",
    reason: "step 0 failed with no attempts left: challenged",
  });
  // With the step settled instead, the next reservation is refused.
  const settled = cov.ok(last, { type: "step_settled", index: 0 }, E);
  cov.rejects(settled, { type: "reserved", index: 1, assignment_id: root(4) }, E, "budget_exhausted");
});

Deno.test("an expired proposal sends the epoch back to collecting; a failed gate keeps the serving model", () => {
  const proposed = run(JOURNAL.slice(0, 2)).at(-1)!;
  const back = cov.ok(proposed, { type: "proposal_expired" }, E);
  assert.deepEqual(back, { status: "collecting", epoch: 7, attempts_left: 3 });
  const opened = run(JOURNAL.slice(0, 10)).at(-1)!;
  const kept = cov.ok(opened, { type: "evaluation_decided", promoted: false }, E);
  assert.equal(kept.status === "decided" && kept.outcome, "kept");
});

Deno.test("startEpoch refuses a negative epoch or an empty attempt budget", () => {
  for (const input of [{ epoch: -1, attempts: 1 }, { epoch: 1, attempts: 0 }, { epoch: 1.5, attempts: 1 }]) {
    const r = startEpoch(input);
    assert.equal(r.ok ? "ok" : r.code, "bad_request");
  }
});

Deno.test("events out of place are rejected and leave the state unchanged", () => {
  const [collected, proposed, training, reserved] = run(JOURNAL.slice(0, 4));
  const evaluating = run(JOURNAL.slice(0, 9)).at(-1)!;
  const opened = run(JOURNAL.slice(0, 10)).at(-1)!;
  const decided = run(JOURNAL).at(-1)!;
  const cases: [EpochState, EpochEvent, string][] = [
    [start(), { type: "proposed", proposal_id: root("a") }, "invalid_transition"],
    [start(), { type: "collected", data_root: "x", documents: 1 }, "bad_request"],
    [start(), { type: "collected", data_root: root("d"), documents: 0 }, "bad_request"],
    [collected!, { type: "activated", steps: 2 }, "invalid_transition"],
    [collected!, { type: "proposal_expired" }, "invalid_transition"],
    [collected!, { type: "proposed", proposal_id: "x" }, "bad_request"],
    [proposed!, { type: "proposed", proposal_id: root("b") }, "busy"],
    [proposed!, { type: "activated", steps: 0 }, "bad_request"],
    [proposed!, { type: "activated", steps: 65 }, "bad_request"],
    [proposed!, { type: "step_settled", index: 0 }, "invalid_transition"],
    [training!, { type: "reserved", index: 1, assignment_id: root(1) }, "bad_request"],
    [training!, { type: "reserved", index: 0, assignment_id: "x" }, "bad_request"],
    [training!, { type: "step_settled", index: 0 }, "not_found"],
    [training!, { type: "evaluation_opened", evaluation_id: root("e") }, "invalid_transition"],
    [reserved!, { type: "reserved", index: 0, assignment_id: root(2) }, "busy"],
    [reserved!, { type: "step_failed", index: 1, reason: "x" }, "not_found"],
    [evaluating, { type: "evaluation_decided", promoted: true }, "invalid_transition"],
    [evaluating, { type: "evaluation_opened", evaluation_id: "x" }, "bad_request"],
    [evaluating, { type: "reserved", index: 2, assignment_id: root(4) }, "invalid_transition"],
    [opened, { type: "evaluation_opened", evaluation_id: root("f") }, "busy"],
    [decided, { type: "collected", data_root: root("d"), documents: 1 }, "invalid_transition"],
  ];
  for (const [state, event, code] of cases) cov.rejects(state, event, E, code);
});

Deno.test("every declared epoch edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
