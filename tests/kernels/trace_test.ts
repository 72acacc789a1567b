import assert from "node:assert/strict";
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { checkRecord, type StageTrace, type StepRecord } from "../../kernels/trace.ts";
import { honestStep } from "./_step_fixture.ts";

const { parent, out } = honestStep();
const PARAMS = { learning_rate: 0.25, clip: 0.5 };

/** Re-ids the traces after an edit so that only the edited rule can fail. */
function check(
  traces: StageTrace[],
  record: Partial<StepRecord> = {},
  candidate: Manifest = out.candidateManifest,
) {
  const r = { ...out.record, traces: traces.map((t) => id(t as unknown as JsonValue)), ...record };
  return checkRecord(r, traces, parent, candidate, PARAMS);
}

function codeOf(v: ReturnType<typeof check>): string {
  return v.ok ? "ok" : v.code;
}

Deno.test("record: an honest record passes every graph check", () => {
  assert.deepEqual(check(out.traces), { ok: true });
});

Deno.test("record: a trace that does not match its id is rejected", () => {
  const r = { ...out.record, traces: [out.record.traces[1]!, out.record.traces[0]!, out.record.traces[2]!] };
  const v = checkRecord(r, out.traces, parent, out.candidateManifest, PARAMS);
  assert.equal(v.ok ? "ok" : v.code, "invalid_record");
});

Deno.test("record: partitions must cover every component once, in numeric order, embed and norm on stage 0", () => {
  const [t0, t1, t2] = out.traces as [StageTrace, StageTrace, StageTrace];
  const swapped = [t0, { ...t1, partition: ["block_002"] }, { ...t2, partition: ["block_001"] }];
  assert.equal(codeOf(check(swapped)), "invalid_record");
  const missing = [t0, t1];
  assert.equal(codeOf(check(missing, { norms: out.record.norms.slice(0, 2) })), "invalid_record");
  const noNorm = [
    { ...t0, partition: ["embed", "block_000"] },
    { ...t1, partition: ["norm", "block_001"] },
    t2,
  ];
  assert.equal(codeOf(check(noNorm)), "invalid_record");
});

Deno.test("record: the activation and gradient chain must link the stages", () => {
  const [t0, t1, t2] = out.traces as [StageTrace, StageTrace, StageTrace];
  assert.equal(codeOf(check([t0, { ...t1, input: t2.output }, t2])), "invalid_record");
  assert.equal(codeOf(check([t0, { ...t1, gradient_out: t0.head_gradient! }, t2])), "invalid_record");
  assert.equal(codeOf(check([{ ...t0, head_input: t1.output }, t1, t2])), "invalid_record");
  assert.equal(codeOf(check([{ ...t0, input: t1.output }, t1, t2])), "invalid_record");
  assert.equal(codeOf(check([{ ...t0, gradient_in: t1.gradient_in }, t1, t2])), "invalid_record");
});

Deno.test("record: norms, scale, loss, learning rate and clip must agree", () => {
  const ts = out.traces;
  assert.equal(codeOf(check(ts, { scale: "0x1.0000000000000p+0" })), "invalid_record");
  assert.equal(
    codeOf(check(ts, { norms: [out.record.norms[1]!, out.record.norms[0]!, out.record.norms[2]!] })),
    "invalid_record",
  );
  assert.equal(codeOf(check(ts, { loss: "0x1.0000000000000p+0" })), "invalid_record");
  assert.equal(codeOf(check(ts, { clip: "0x1.0000000000000p+0" })), "invalid_record");
  const r = { ...out.record };
  assert.equal(
    codeOf(checkRecord(r, ts, parent, out.candidateManifest, { learning_rate: 0.5, clip: 0.5 })),
    "invalid_record",
  );
});

Deno.test("record: the candidate must be the parent with only the new component roots", () => {
  const changed = { ...out.candidateManifest, tokenizer_root: "cd".repeat(32) };
  assert.equal(
    codeOf(check(out.traces, { model_root: id(changed as unknown as JsonValue) }, changed)),
    "invalid_record",
  );
  const [t0, t1, t2] = out.traces as [StageTrace, StageTrace, StageTrace];
  const stale = { ...t1, components: { block_001: parent.components.block_001! } };
  assert.equal(codeOf(check([t0, stale, t2])), "invalid_record");
  assert.equal(codeOf(check(out.traces, { parent: out.candidateRoot })), "invalid_record");
});

Deno.test("record: a malformed trace is rejected", () => {
  const [t0, t1, t2] = out.traces as [StageTrace, StageTrace, StageTrace];
  assert.equal(codeOf(check([t0, { ...t1, loss: "0x0.0p+0" }, t2])), "invalid_record");
  assert.equal(codeOf(check([t0, { ...t1, scale: "1.0" }, t2])), "invalid_record");
  assert.equal(codeOf(check([t0, { ...t1, gradient_in: null }, t2])), "invalid_record");
});
