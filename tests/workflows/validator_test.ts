import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  bonded,
  boundaryAtOrAfter,
  validatorMachine,
  type ValidatorState,
} from "../../workflows/validator.ts";

const params = { epoch_blocks: 10, activation_blocks: 3, evidence_blocks: 5, evidence_ms: 1_000 };
const at = (height: number, time = height * 100) => ({ height, time, params });

Deno.test("a bond at height 8 with activation_blocks 3 activates at the boundary 20, not before", () => {
  const s = bonded(at(8));
  assertEquals(s, { status: "pending", activation_height: 20 });
  assertEquals(validatorMachine.apply(s, { type: "tick" }, at(19)), { ok: true, state: s });
  assertEquals(validatorMachine.apply(s, { type: "tick" }, at(20)), {
    ok: true,
    state: { status: "active" },
  });
  assertEquals(boundaryAtOrAfter(20, 10), 20);
});

Deno.test("the full lifecycle: active → leaving → cooldown → withdrawn, withdraw waits blocks and time", () => {
  const r = validatorMachine.replay({ status: "active" }, [
    { event: { type: "unbond", others_active: 1 }, env: at(21) },
    { event: { type: "tick" }, env: at(29) },
    { event: { type: "tick" }, env: at(30, 3_000) },
    { event: { type: "withdraw" }, env: at(35, 4_000) },
  ]);
  assertEquals(r, {
    ok: true,
    state: { status: "withdrawn", withdrawn_height: 35 },
    states: [
      { status: "leaving", leave_height: 30 },
      { status: "leaving", leave_height: 30 },
      { status: "cooldown", removed_height: 30, removed_time: 3_000 },
      { status: "withdrawn", withdrawn_height: 35 },
    ],
  });
});

Deno.test("withdraw is too early until both evidence_blocks and evidence_ms have passed", () => {
  const s: ValidatorState = { status: "cooldown", removed_height: 30, removed_time: 3_000 };
  const code = (env: ReturnType<typeof at>) => {
    const r = validatorMachine.apply(s, { type: "withdraw" }, env);
    return r.ok ? "ok" : r.code;
  };
  assertEquals([code(at(34, 9_000)), code(at(40, 3_999)), code(at(35, 4_000))], [
    "withdraw_too_early",
    "withdraw_too_early",
    "ok",
  ]);
});

Deno.test("the last active validator cannot unbond; a pending one is removed at once", () => {
  const r = validatorMachine.apply({ status: "active" }, { type: "unbond", others_active: 0 }, at(5));
  assertEquals(r.ok ? "ok" : r.code, "last_validator");
  assertEquals(
    validatorMachine.apply(
      { status: "pending", activation_height: 10 },
      { type: "unbond", others_active: 0 },
      at(5, 7),
    ),
    { ok: true, state: { status: "cooldown", removed_height: 5, removed_time: 7 } },
  );
});

Deno.test("jail removes power from active, leaving and pending validators only", () => {
  assertEquals(validatorMachine.apply({ status: "leaving", leave_height: 9 }, { type: "jail" }, at(4)), {
    ok: true,
    state: { status: "jailed", jailed_height: 4 },
  });
  const r = validatorMachine.apply({ status: "withdrawn", withdrawn_height: 1 }, { type: "jail" }, at(4));
  assertEquals(r.ok ? "ok" : r.code, "invalid_transition");
});

Deno.test("the diagram lists every declared edge", () => {
  const d = validatorMachine.diagram();
  assertEquals(d.split("\n")[1], "  [*] --> pending");
  assertEquals(d.includes("  active --> leaving: unbond"), true);
  assertEquals(d.split("\n").length, validatorMachine.edges.length + 3);
});
