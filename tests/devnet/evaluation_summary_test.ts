import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { JsonObject } from "../../core/canonical.ts";
import { evaluationLines, evaluationOutcome } from "../../devnet/evaluation_summary.ts";

const A = "a".repeat(64), B = "b".repeat(64), C = "c".repeat(64), E = "e".repeat(64);

function answer(promoted: boolean): JsonObject {
  const gate = (S: string, pass: boolean) => ({
    S,
    Q: "12",
    G: "34",
    pass,
    n: 32,
    mean_change_micronats: "-1.5",
    baseline: [],
    candidate: [],
  });
  return {
    evaluation_id: E,
    cohort: C,
    status: "decided",
    baseline: A,
    candidate: B,
    scores: [
      { claim_id: "1".repeat(64), status: "settled", side: "baseline", role: "fresh", offset: 0 },
      {
        claim_id: "2".repeat(64),
        status: "rejected",
        side: "candidate",
        role: "fresh",
        offset: 0,
        reason: "mismatch: window loss",
      },
      { claim_id: "3".repeat(64), status: "settled", side: "candidate", role: "fresh", offset: 0 },
    ],
    decision: {
      promoted,
      reason: "gate",
      gate: { retention: gate("-48", true), fresh: gate("7", promoted) },
    },
  };
}

Deno.test("a decided evaluation shows its decision, each group's S, Q, G and passed, the rejected score and the serving root before and after", () => {
  const promoted = evaluationOutcome(answer(true))!;
  assertEquals(promoted, {
    evaluation_id: E,
    cohort: C,
    decision: "promote",
    reason: "gate",
    groups: {
      retention: { S: "-48", Q: "12", G: "34", passed: true, mean_change_micronats: "-1.5" },
      fresh: { S: "7", Q: "12", G: "34", passed: true, mean_change_micronats: "-1.5" },
    },
    serving_root_before: A,
    serving_root_after: B,
    candidate: B,
    settled_scores: 2,
    rejected: [{
      claim_id: "2".repeat(64),
      side: "candidate",
      role: "fresh",
      offset: 0,
      reason: "mismatch: window loss",
    }],
  });
  const kept = evaluationOutcome(answer(false))!;
  assertEquals([kept.decision, kept.serving_root_after, kept.groups.fresh!.passed], ["keep", A, false]);
  assertEquals(evaluationLines([kept]).at(-1), `  decision: keep (gate); serving root stays ${A}`);
  assertEquals(evaluationLines([promoted]).at(-1), `  decision: promote (gate); serving root ${A} → ${B}`);
  assertEquals(
    evaluationLines([promoted])[1],
    "  retention mean change -1.5 µnat, S=-48 Q=12 G=34 passed",
  );
});

Deno.test("an evaluation not yet decided has no outcome; one decided by its deadline shows no gate", () => {
  assertEquals(evaluationOutcome({ ...answer(true), status: "scoring", decision: null }), null);
  const expired = evaluationOutcome({
    ...answer(false),
    decision: { promoted: false, reason: "expired", gate: null },
  })!;
  assertEquals([expired.decision, expired.groups], ["keep", { retention: null, fresh: null }]);
  assertEquals(evaluationLines([expired])[1], "  retention: no gate (expired)");
});
