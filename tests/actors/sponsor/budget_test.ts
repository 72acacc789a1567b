import assert from "node:assert/strict";
import { ProtocolError } from "../../../core/errors.ts";
import { Budget } from "../../../actors/sponsor/budget.ts";

const P = "f".repeat(64);

function temp(): string {
  return Deno.makeTempDirSync({ prefix: "budget-test-" });
}

Deno.test("an attempt is charged in the file before anything else, and a reopened file keeps its own budget", async () => {
  const dir = temp();
  try {
    const path = `${dir}/budget.json`;
    const b = await Budget.open(path, 2);
    const a = await b.charge({ parent: P, round: 0, workers: ["w"] });
    assert.deepEqual(a, { n: 0, parent: P, round: 0, workers: ["w"], end: null });
    assert.equal(
      await Deno.readTextFile(path),
      `{"attempts":[{"end":null,"n":0,"parent":"${P}","round":0,"workers":["w"]}],"budget":2}\n`,
    );
    assert.equal(((await Deno.stat(path)).mode ?? 0) & 0o777, 0o600);
    // A restart asking for a bigger budget cannot replenish it; the open attempt is the current one.
    const again = await Budget.open(path, 100);
    assert.equal(again.total, 2);
    assert.equal(again.spent, 1);
    assert.deepEqual(again.current(), a);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a second attempt while one is open is busy, and past the budget is budget_exhausted, the file unchanged", async () => {
  const dir = temp();
  try {
    const path = `${dir}/budget.json`;
    const b = await Budget.open(path, 1);
    await b.charge({ parent: P, round: 0, workers: [] });
    const before = await Deno.readTextFile(path);
    await assert.rejects(
      b.charge({ parent: P, round: 0, workers: [] }),
      (e: unknown) => e instanceof ProtocolError && e.code === "busy",
    );
    await b.finish(0, { outcome: "failed", claim_id: null, loss: null, reason: "expired" });
    assert.equal(b.current(), null);
    assert.equal(b.settled(), 0);
    const finished = await Deno.readTextFile(path);
    assert.notEqual(finished, before);
    await assert.rejects(
      b.charge({ parent: P, round: 1, workers: [] }),
      (e: unknown) =>
        e instanceof ProtocolError && e.code === "budget_exhausted" &&
        e.message === "Cannot charge an attempt: 1 of 1 attempts are spent",
    );
    assert.equal(await Deno.readTextFile(path), finished);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a new budget file needs a positive budget", async () => {
  const dir = temp();
  try {
    await assert.rejects(
      Budget.open(`${dir}/budget.json`, 0),
      (e: unknown) => e instanceof ProtocolError && e.code === "bad_request",
    );
    await assert.rejects(Deno.stat(`${dir}/budget.json`), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
