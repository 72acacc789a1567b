import assert from "node:assert/strict";
import {
  evaluation,
  type EvaluationEvent,
  type EvaluationState,
  type Layout,
  openEvaluation,
} from "../../workflows/evaluation.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { Coverage, env, root } from "./_helpers.ts";

const cov = new Coverage(evaluation);
const RETENTION = Array.from({ length: 32 }, (_, i) => i);
const FRESH = [0, ...RETENTION]; // document 0 has two windows: 33 windows
const LAYOUT: Layout = { retention: RETENTION, fresh: FRESH };
const INPUT = { id: root("e"), baseline: root(1), candidate: root(2), data_root: root("d"), layout: LAYOUT };
let claims = 0;

/** Opened at 100: expires 700 (devnet evaluation_blocks 600). */
function opened(): EvaluationState {
  const r = openEvaluation(INPUT, env(100));
  assert.ok(r.ok);
  return r.state;
}

/** Scores every window of a group with `loss(window)`, 4 windows per score claim, all settling. */
function scoreGroup(
  s: EvaluationState,
  side: "baseline" | "candidate",
  role: "retention" | "fresh",
  loss: (i: number) => number,
): EvaluationState {
  const total = LAYOUT[role].length;
  for (let offset = 0; offset < total; offset += 4) {
    const windows = Math.min(4, total - offset);
    const claim_id = root(++claims);
    s = cov.ok(s, { type: "score", claim_id, side, role, offset, windows }, env(200));
    const idx = Array.from({ length: windows }, (_, k) => offset + k);
    s = cov.ok(s, {
      type: "score_settled",
      claim_id,
      losses: idx.map((i) => toHexFloat(loss(i))),
      targets: idx.map(() => 64),
    }, env(201));
  }
  return s;
}

function scoreAll(base: number, retention: number, fresh: number): EvaluationState {
  let s = opened();
  s = scoreGroup(s, "baseline", "retention", () => base);
  s = scoreGroup(s, "baseline", "fresh", () => base);
  s = scoreGroup(s, "candidate", "retention", () => retention);
  return scoreGroup(s, "candidate", "fresh", () => fresh);
}

Deno.test("open_evaluation binds baseline, candidate, cohort and expires = H + evaluation_blocks", () => {
  const s = opened();
  assert.equal(s.status, "open");
  assert.equal(s.expires, 700);
  assert.deepEqual(s.groups.candidate_fresh, { losses: [], targets: [], pending: null });
  assert.deepEqual(s.moves, []);
});

Deno.test("open_evaluation is rejected for a malformed root or a layout that is not 32 documents of 1-4 windows", () => {
  const layouts: Layout[] = [
    { retention: RETENTION.slice(1), fresh: FRESH },
    { retention: RETENTION.slice(0, 31), fresh: FRESH },
    { retention: [0, 0, 0, 0, 0, ...RETENTION.slice(1)], fresh: FRESH },
    { retention: RETENTION, fresh: [0, 2, ...RETENTION.slice(3)] },
    { retention: [], fresh: FRESH },
  ];
  for (const layout of layouts) {
    const r = openEvaluation({ ...INPUT, layout }, env(1));
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.code, "bad_request");
  }
  const r = openEvaluation({ ...INPUT, baseline: "x" }, env(1));
  assert.equal(r.ok ? "ok" : r.code, "bad_request");
  assert.ok(
    openEvaluation(
      { ...INPUT, layout: { retention: [0, 0, 0, 0, ...RETENTION.slice(1)], fresh: FRESH } },
      env(1),
    ).ok,
  );
});

Deno.test("all documents improving 2.0 → 1.9 promote the candidate", () => {
  const s = scoreAll(2.0, 1.9, 1.9);
  const d = cov.ok(s, { type: "finish" }, env(300));
  assert.equal(d.status, "decided");
  if (d.status !== "decided") return;
  assert.equal(d.promoted, true);
  assert.equal(d.reason, "gate");
  assert.deepEqual(d.gate, {
    retention: { pass: true, S: "-3200032", Q: "0", G: "3839968" },
    fresh: { pass: true, S: "-3200032", Q: "0", G: "3167968" },
  });
});

Deno.test("an unchanged candidate is not promoted", () => {
  const d = cov.ok(scoreAll(2.0, 2.0, 2.0), { type: "finish" }, env(300));
  if (d.status !== "decided") throw new Error(d.status);
  assert.equal(d.promoted, false);
  assert.equal(d.gate?.retention.pass, true);
  assert.equal(d.gate?.fresh.pass, false);
});

Deno.test("retention worse by 0.1 per document blocks promotion even when fresh improves", () => {
  const d = cov.ok(scoreAll(2.0, 2.1, 1.9), { type: "finish" }, env(300));
  if (d.status !== "decided") throw new Error(d.status);
  assert.equal(d.promoted, false);
  assert.deepEqual(d.gate?.retention, { pass: false, S: "3200000", Q: "0", G: "-2560064" });
});

Deno.test("a document's windows are weighted by their targets before q is taken", () => {
  // Document 0 of fresh has windows 0 and 1; weighting them 1:3 gives 1.5·1/4 + 2.5·3/4 = 2.25 for the candidate.
  let s = opened();
  s = scoreGroup(s, "baseline", "retention", () => 2);
  s = scoreGroup(s, "candidate", "retention", () => 2);
  s = scoreGroup(s, "baseline", "fresh", () => 2);
  const total = FRESH.length;
  for (let offset = 0; offset < total; offset += 4) {
    const windows = Math.min(4, total - offset);
    const claim_id = root(++claims);
    s = cov.ok(s, { type: "score", claim_id, side: "candidate", role: "fresh", offset, windows }, env(200));
    const idx = Array.from({ length: windows }, (_, k) => offset + k);
    s = cov.ok(s, {
      type: "score_settled",
      claim_id,
      losses: idx.map((i) => toHexFloat(i === 0 ? 1.5 : i === 1 ? 2.5 : 1.9)),
      targets: idx.map((i) => (i === 0 ? 1 : i === 1 ? 3 : 64)),
    }, env(201));
  }
  const d = cov.ok(s, { type: "finish" }, env(300));
  if (d.status !== "decided") throw new Error(d.status);
  // d_0 = q(2.25) − q(2) = 250,000; the other 31 are −100,001: S = 250,000 − 3,100,031.
  assert.equal(d.gate?.fresh.S, "-2850031");
});

Deno.test("score is rejected out of order, with the wrong window count, while one is pending, or after expiry", () => {
  const s = opened();
  const ev = (o: Partial<Extract<EvaluationEvent, { type: "score" }>>): EvaluationEvent => ({
    type: "score",
    claim_id: root("a"),
    side: "baseline",
    role: "fresh",
    offset: 0,
    windows: 4,
    ...o,
  });
  cov.rejects(s, ev({ offset: 4 }), env(200), "bad_request");
  cov.rejects(s, ev({ windows: 3 }), env(200), "bad_request");
  cov.rejects(s, ev({ side: "other" as "baseline" }), env(200), "bad_request");
  cov.rejects(s, ev({}), env(701), "expired");
  const pending = cov.ok(s, ev({}), env(200));
  assert.equal(pending.status, "scoring");
  cov.rejects(pending, ev({ claim_id: root("b") }), env(200), "busy");
  // Another group may be scored at the same time.
  assert.equal(cov.ok(pending, ev({ claim_id: root("b"), role: "retention" }), env(200)).status, "scoring");
  // The last score of a group covers only the remaining window.
  let full = opened();
  full = scoreGroup(full, "baseline", "fresh", () => 2);
  cov.rejects(full, ev({ offset: 32, windows: 4 }), env(200), "bad_request");
  cov.rejects(full, ev({ offset: 33, windows: 0 }), env(200), "bad_request");
});

Deno.test("a failed score frees its group for a new score at the same offset", () => {
  const s = cov.ok(opened(), {
    type: "score",
    claim_id: root("a"),
    side: "candidate",
    role: "retention",
    offset: 0,
    windows: 4,
  }, env(200));
  const freed = cov.ok(s, { type: "score_failed", claim_id: root("a") }, env(210));
  assert.deepEqual(freed.groups.candidate_retention, { losses: [], targets: [], pending: null });
  cov.rejects(freed, { type: "score_failed", claim_id: root("a") }, env(210), "not_found");
  assert.equal(
    cov.ok(freed, {
      type: "score",
      claim_id: root("b"),
      side: "candidate",
      role: "retention",
      offset: 0,
      windows: 4,
    }, env(211)).status,
    "scoring",
  );
});

Deno.test("score_settled is rejected for an unknown claim, a wrong count, a bad hex float, a negative loss or zero targets", () => {
  const s = cov.ok(opened(), {
    type: "score",
    claim_id: root("a"),
    side: "baseline",
    role: "retention",
    offset: 0,
    windows: 4,
  }, env(200));
  const two = toHexFloat(2);
  const settle = (losses: string[], targets: number[], claim_id = root("a")): EvaluationEvent => ({
    type: "score_settled",
    claim_id,
    losses,
    targets,
  });
  cov.rejects(s, settle([two, two, two, two], [1, 1, 1, 1], root("b")), env(201), "not_found");
  cov.rejects(s, settle([two, two, two], [1, 1, 1]), env(201), "invalid_record");
  cov.rejects(s, settle([two, two, two, "2.0"], [1, 1, 1, 1]), env(201), "invalid_record");
  cov.rejects(s, settle([two, two, two, toHexFloat(-1)], [1, 1, 1, 1]), env(201), "invalid_record");
  cov.rejects(s, settle([two, two, two, two], [1, 1, 1, 0]), env(201), "invalid_record");
  cov.rejects(s, settle([two, two, two, two], [1, 1, 1]), env(201), "invalid_record");
});

Deno.test("finish is rejected until every window of all four groups has settled", () => {
  cov.rejects(opened(), { type: "finish" }, env(300), "invalid_transition");
  let s = opened();
  s = scoreGroup(s, "baseline", "retention", () => 2);
  cov.rejects(s, { type: "finish" }, env(300), "invalid_transition");
});

Deno.test("an evaluation past expires fails without promotion, from open or scoring", () => {
  cov.rejects(opened(), { type: "tick" }, env(700), "invalid_transition");
  for (const s of [opened(), scoreGroup(opened(), "baseline", "retention", () => 2)]) {
    const d = cov.ok(s, { type: "tick" }, env(701));
    assert.equal(d.status, "decided");
    if (d.status !== "decided") return;
    assert.deepEqual([d.promoted, d.reason, d.gate], [false, "expired", null]);
    for (const e of [{ type: "tick" } as const, { type: "finish" } as const]) {
      cov.rejects(d, e, env(800), "invalid_transition");
    }
  }
});

Deno.test("every declared evaluation edge is exercised by these tests", () => {
  assert.deepEqual(cov.missing(), []);
});

Deno.test("an evaluation of 8 documents per role (genesis evaluation_documents 8) opens only on 8-document layouts and gates 8 pairs", () => {
  const eight = Array.from({ length: 8 }, (_, i) => i);
  const input = { ...INPUT, layout: { retention: eight, fresh: eight } };
  const refused = openEvaluation(INPUT, env(100), 8);
  assert.deepEqual(refused.ok ? "ok" : [refused.code, refused.message], [
    "bad_request",
    "Cannot open evaluation: retention layout has 32 documents, expected 8",
  ]);
  const wrong = openEvaluation(input, env(100));
  assert.equal(
    wrong.ok ? "ok" : wrong.message,
    "Cannot open evaluation: retention layout has 8 documents, expected 32",
  );
  const r = openEvaluation(input, env(100), 8);
  assert.ok(r.ok);
  let s = r.state;
  for (const [side, loss] of [["baseline", 2.0], ["candidate", 1.9]] as const) {
    for (const role of ["retention", "fresh"] as const) {
      for (const offset of [0, 4]) {
        const claim_id = root(++claims);
        s = cov.ok(s, { type: "score", claim_id, side, role, offset, windows: 4 }, env(200));
        s = cov.ok(s, {
          type: "score_settled",
          claim_id,
          losses: [0, 1, 2, 3].map(() => toHexFloat(loss)),
          targets: [64, 64, 64, 64],
        }, env(201));
      }
    }
  }
  const d = cov.ok(s, { type: "finish" }, env(300));
  if (d.status !== "decided") throw new Error(d.status);
  // d = q(1.9) - q(2.0) = -100001 per document: S = 8d, Q = 0, G = (m - 2)·8 - S.
  assert.deepEqual([d.promoted, d.gate], [true, {
    retention: { pass: true, S: "-800008", Q: "0", G: "959992" },
    fresh: { pass: true, S: "-800008", Q: "0", G: "791992" },
  }]);
});
