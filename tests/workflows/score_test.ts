import assert from "node:assert/strict";
import { openScore, score, type ScoreInput, type ScoreState } from "../../workflows/score.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { Coverage, env, exerciseClaimPhase, root } from "./_helpers.ts";

const cov = new Coverage(score);
const INPUT: ScoreInput = {
  id: root(1),
  owner: "scorer",
  stages: 1,
  evaluation_id: root(2),
  side: "candidate",
  role: "retention",
  offset: 4,
  record_root: root(3),
  metadata_root: root(4),
  losses: [toHexFloat(2), toHexFloat(1.5)],
  targets: [64, 10],
};

function fresh(h = 100): ScoreState {
  const r = openScore(INPUT, env(h));
  assert.ok(r.ok);
  return r.state;
}

Deno.test("a score locks claim_bond, opens a window and keeps its committed losses", () => {
  assert.deepEqual(fresh(), {
    status: "claimed",
    claim: {
      id: root(1),
      owner: "scorer",
      bond: 20_000_000,
      stages: 1,
      deadline: 106,
      expires: 220,
      challenge: null,
    },
    scored: {
      evaluation_id: root(2),
      side: "candidate",
      role: "retention",
      offset: 4,
      record_root: root(3),
      metadata_root: root(4),
      losses: ["0x1.0000000000000p+1", "0x1.8000000000000p+0"],
      targets: [64, 10],
    },
    moves: [{ op: "lock", account: "scorer", amount: 20_000_000 }],
  });
});

Deno.test("a settled score refunds its bond and mints nothing", () => {
  const s = cov.ok(fresh(), { type: "tick" }, env(107));
  assert.equal(s.status, "settled");
  assert.deepEqual(s.moves, [{ op: "release", account: "scorer", amount: 20_000_000 }]);
  cov.rejects(s, { type: "tick" }, env(200), "invalid_transition");
});

Deno.test("a score is rejected for bad losses, counts, offsets, roots or stages", () => {
  const cases: Partial<ScoreInput>[] = [
    { losses: [], targets: [] },
    { losses: ["0x1p+1"], targets: [1] },
    { losses: [toHexFloat(-2)], targets: [1] },
    { losses: Array(5).fill(toHexFloat(1)), targets: Array(5).fill(1) },
    { targets: [64] },
    { targets: [64, 0] },
    { offset: 3 },
    { offset: -4 },
    { record_root: "nope" },
    { stages: 0 },
    { stages: 65 },
  ];
  for (const c of cases) {
    const r = openScore({ ...INPUT, ...c }, env(1));
    assert.equal(r.ok ? "ok" : r.code, "invalid_record", JSON.stringify(c));
  }
});

Deno.test("every claim-phase edge of a score is taken as declared, and terminal scores reject events", () => {
  exerciseClaimPhase(cov, () => fresh(), 100, "scorer");
  const challenged = cov.ok(
    fresh(),
    {
      type: "challenge",
      sender: "r",
      kind: "availability",
      stage: 0,
      block: null,
      phase: null,
      object_root: root(9),
      needed: [root(9)],
    },
    env(101),
  );
  const rejected = cov.ok(challenged, { type: "tick" }, env(122));
  assert.equal(rejected.status, "rejected");
  cov.rejects(rejected, { type: "tick" }, env(300), "invalid_transition");
  cov.rejects(rejected, { type: "resolve", sender: "v", verdict: "match" }, env(300), "invalid_transition");
});

Deno.test("every declared score edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});
