import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { toHexFloat } from "../../core/hex_float.ts";
import { evaluatorLine } from "../../devnet/evaluation_phase.ts";

Deno.test("the evaluator's events become [evaluate] lines with decimal losses; account, waiting and decision lines are not shown", () => {
  const id = "ab".repeat(32);
  const scored = JSON.stringify({
    detail: `candidate fresh 0: ${toHexFloat(7.25)} ${toHexFloat(8.123456)}`,
    evaluation: id,
    event: "scored",
  });
  assertEquals(evaluatorLine(scored), "[evaluate] scored abababababab: candidate fresh 0: 7.2500 8.1235");
  assertEquals(
    evaluatorLine(JSON.stringify({ detail: "cohort 12", evaluation: null, event: "open" })),
    "[evaluate] open: cohort 12",
  );
  for (const event of ["account", "waiting", "decision"]) {
    assertEquals(evaluatorLine(JSON.stringify({ detail: "x", evaluation: id, event })), null);
  }
  assertEquals(
    evaluatorLine("error: Cannot score (busy)"),
    "[evaluate] evaluator: error: Cannot score (busy)",
  );
  assertEquals(evaluatorLine("not json"), null);
});
