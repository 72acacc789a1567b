import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { microQ } from "../../../workflows/gate.ts";
import type { Net } from "../training/_harness.ts";
import { evaluationAnswer, finishTx, type LossFn, open, scoreAll, trainedNet } from "./_eval.ts";

/** The smallest float64 at or above `x` whose q is `q`. */
function withQ(x: number, q: bigint): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, x);
  for (let i = 0; i < 64; i++) {
    if (microQ(v.getFloat64(0)) === q) return v.getFloat64(0);
    v.setBigUint64(0, v.getBigUint64(0) + 1n);
  }
  throw new Error(`no float64 near ${x} has q ${q}`);
}

/** Runs a whole evaluation with the chosen losses and finishes it; the decision and the lifecycle after. */
function evaluate(
  loss: LossFn,
  net?: Net,
): { decision: JsonObject; lifecycle: JsonObject; before: JsonObject } {
  const n = net ?? trainedNet().net;
  const before = n.lifecycle();
  const id = open(n);
  scoreAll(n, id, loss);
  n.ok(finishTx(n, id));
  const e = evaluationAnswer(n, id);
  assert.equal(e.status, "decided");
  return { decision: e.decision as JsonObject, lifecycle: n.lifecycle(), before };
}

function gate(decision: JsonObject, role: "retention" | "fresh"): Record<string, unknown> {
  const g = (decision.gate as JsonObject)[role] as JsonObject;
  return { pass: g.pass, S: g.S, Q: g.Q, G: g.G };
}

Deno.test("every document improving 2.0 → 1.9 promotes the candidate: the serving root moves", () => {
  const { decision, lifecycle, before } = evaluate((side) => (side === "baseline" ? 2.0 : 1.9));
  assert.equal(decision.promoted, true);
  assert.equal(decision.reason, "gate");
  // d = q(1.9) − q(2.0) = 1,899,999 − 2,000,000 per document.
  assert.deepEqual(gate(decision, "retention"), { pass: true, S: "-3200032", Q: "0", G: "3839968" });
  assert.deepEqual(gate(decision, "fresh"), { pass: true, S: "-3200032", Q: "0", G: "3167968" });
  assert.equal(((decision.gate as JsonObject).fresh as JsonObject).mean_change_micronats, "-100001");
  assert.notEqual(before.learning_root, before.serving_root);
  assert.equal(lifecycle.serving_root, before.learning_root);
  assert.equal(lifecycle.learning_root, before.learning_root);
});

Deno.test("an unchanged candidate fails the fresh group: the learning root returns to the serving root", () => {
  const { decision, lifecycle, before } = evaluate(() => 2.0);
  assert.equal(decision.promoted, false);
  assert.deepEqual(gate(decision, "retention"), { pass: true, S: "0", Q: "0", G: "639936" });
  assert.deepEqual(gate(decision, "fresh"), { pass: false, S: "0", Q: "0", G: "-32064" });
  assert.equal(lifecycle.serving_root, before.serving_root);
  assert.equal(lifecycle.learning_root, before.serving_root);
});

Deno.test("exactly −1,000 micronats per fresh document fails with G = −64", () => {
  const better = withQ(1.999, 1_999_000n);
  const { decision, lifecycle, before } = evaluate((side, role) =>
    role === "fresh" && side === "candidate" ? better : 2.0
  );
  assert.equal(decision.promoted, false);
  assert.deepEqual(gate(decision, "fresh"), { pass: false, S: "-32000", Q: "0", G: "-64" });
  assert.equal(((decision.gate as JsonObject).fresh as JsonObject).mean_change_micronats, "-1000");
  assert.equal(lifecycle.learning_root, before.serving_root);
});

Deno.test("retention worse by 0.1 nats fails even though fresh improves", () => {
  const { decision, lifecycle, before } = evaluate((side, role) =>
    side === "baseline" ? 2.0 : role === "retention" ? 2.1 : 1.9
  );
  assert.equal(decision.promoted, false);
  assert.deepEqual(gate(decision, "retention"), { pass: false, S: "3200000", Q: "0", G: "-2560064" });
  assert.equal(gate(decision, "fresh").pass, true);
  assert.equal(lifecycle.serving_root, before.serving_root);
});

/** A one-row window of 6 tokens with exactly `targets` labelled positions (the next tokens). */
function partial(batch: Batch, targets: number): Batch {
  const ids = batch.input_ids[0]!;
  return { input_ids: [[...ids]], labels: [ids.map((_, t) => (t < targets ? ids[t + 1]! : -100))] };
}

Deno.test("a document's windows are weighted by their targets: (2.0 × 3 + 6.0 × 1) / 4 = 3.0", () => {
  // Retention document 0 gets a second window: 3 targets, then 1 target (33 retention windows in all).
  const { net } = trainedNet({
    edit(entries, batches) {
      const doc = entries.find((e) => e.role === "retention")!;
      const first = batches.get(doc.batches[0]!)!;
      const a = partial(first, 3),
        b = partial({ input_ids: [[...first.input_ids[0]!].reverse()], labels: [] }, 1);
      batches.delete(doc.batches[0]!);
      const roots = [a, b].map((x) => {
        const r = idOf(x);
        batches.set(r, x);
        return r;
      });
      doc.batches.splice(0, 1, ...roots);
    },
  });
  const { decision } = evaluate((side, role, w) => {
    if (role === "retention" && w === 0) return side === "baseline" ? 2.0 : 1.5;
    if (role === "retention" && w === 1) return side === "baseline" ? 6.0 : 1.5;
    return side === "baseline" ? 2.0 : 1.9;
  }, net);
  const retention = (decision.gate as JsonObject).retention as JsonObject;
  const base = retention.baseline as JsonObject[], cand = retention.candidate as JsonObject[];
  assert.deepEqual(base[0], { loss: toHexFloat(3.0), q: "3000000" });
  assert.deepEqual(cand[0], { loss: toHexFloat(1.5), q: "1500000" });
  assert.deepEqual(base[1], { loss: toHexFloat(2.0), q: "2000000" });
  assert.equal(base.length, 32);
  // S = (1,500,000 − 3,000,000) + 31 × (1,899,999 − 2,000,000).
  assert.equal(retention.S, String(-1_500_000 + 31 * -100_001));
  const e = evaluationAnswer(net);
  const recent = (e.recent as JsonObject[])[0]!;
  const m = ((recent.measurements as JsonObject).baseline as JsonObject).retention as JsonObject[];
  assert.equal(m.length, 33);
  assert.deepEqual([m[0]!.document, m[0]!.targets, m[1]!.document, m[1]!.targets], [0, 3, 0, 1]);
});

function idOf(b: Batch): string {
  return id(b as unknown as JsonValue);
}
