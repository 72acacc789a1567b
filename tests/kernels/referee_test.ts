import assert from "node:assert/strict";
import { id, sha256Hex } from "../../core/digest.ts";
import { growManifest } from "../../kernels/growth.ts";
import { replayGrowth, replayStage } from "../../kernels/referee.ts";
import { readValue, writeSafetensors, writeValue } from "../../kernels/safetensors.ts";
import type { StageTrace } from "../../kernels/trace.ts";
import { honestStep } from "./_step_fixture.ts";
import { TINY_BATCH } from "./_tiny.ts";

const fixture = honestStep();
const ACT = [2, 6, 16];

function replay(stage: number, trace: StageTrace, objects = fixture.objects) {
  return replayStage({
    parent: fixture.parent,
    batch: TINY_BATCH,
    stage,
    trace,
    fetch: (r) => objects.get(r),
  });
}

/** Stores a copy of an activation with one element nudged; returns its root and the new objects. */
function forgedValue(root: string): { root: string; objects: Map<string, Uint8Array> } {
  const t = readValue(fixture.objects.get(root)!, ACT);
  t.data[3] = t.data[3]! + 0.125;
  const bytes = writeValue(t);
  const objects = new Map(fixture.objects);
  objects.set(sha256Hex(bytes), bytes);
  return { root: sha256Hex(bytes), objects };
}

Deno.test("referee: every stage of an honest step matches", () => {
  fixture.out.traces.forEach((t, i) => assert.deepEqual(replay(i, t), { verdict: "match" }));
});

/** `t` with its last block's commitments changed (the stage's own values are the last block's). */
function lastBlock(t: StageTrace, change: Partial<StageTrace["blocks"][number]>): StageTrace["blocks"] {
  return t.blocks.map((b, j) => j === t.blocks.length - 1 ? { ...b, ...change } : b);
}

Deno.test("referee: a forged output is named forward output, at the stage's last block", () => {
  for (const stage of [0, 1]) {
    const t = fixture.out.traces[stage]!;
    const f = forgedValue(t.output);
    const v = replay(stage, { ...t, output: f.root, blocks: lastBlock(t, { output: f.root }) }, f.objects);
    assert.equal(v.verdict === "mismatch" && v.what, "forward output");
    assert.deepEqual([(v as { block?: unknown }).block, (v as { phase?: unknown }).phase], [0, "forward"]);
  }
});

Deno.test("referee: a forged embedding output is named forward output of stage 0's head", () => {
  const t = fixture.out.traces[0]!;
  const v = replay(0, { ...t, embedding: "ab".repeat(32) });
  assert.equal(v.verdict === "mismatch" && v.what, "forward output");
  assert.deepEqual([(v as { block?: unknown }).block, (v as { phase?: unknown }).phase], ["head", "forward"]);
});

Deno.test("referee: a forged loss on stage 0 is named head loss, a forged head gradient head gradient", () => {
  const t = fixture.out.traces[0]!;
  const loss = replay(0, { ...t, loss: "0x1.0000000000000p+1" });
  assert.equal(loss.verdict === "mismatch" && loss.what, "head loss");
  assert.equal(
    (loss as { message: string }).message,
    `invalid_record: Cannot replay: loss is ${t.loss}, committed 0x1.0000000000000p+1`,
  );
  const f = forgedValue(t.head_gradient!);
  const grad = replay(0, { ...t, head_gradient: f.root }, f.objects);
  assert.equal(grad.verdict === "mismatch" && grad.what, "head gradient");
  assert.match((grad as { message: string }).message, new RegExp(`committed ${f.root}$`));
  const missing = new Map(fixture.objects);
  missing.delete(t.head_input!);
  assert.equal((replay(0, t, missing) as { what?: string }).what, "head loss");
});

Deno.test("referee: a forged input gradient is named input gradient, a forged squared norm gradient norm", () => {
  const t = fixture.out.traces[2]!;
  const f = forgedValue(t.gradient_in!);
  const blocks = t.blocks.map((b, j) => j === 0 ? { ...b, gradient_in: f.root } : b);
  const g = replay(2, { ...t, gradient_in: f.root, blocks }, f.objects);
  assert.deepEqual([(g as { what?: string }).what, (g as { block?: unknown }).block], ["input gradient", 0]);
  const low = "0x1.0000000000000p-3";
  const norm = replay(2, { ...t, norm_squared: low, blocks: lastBlock(t, { norm_squared: low }) });
  assert.deepEqual([(norm as { what?: string }).what, (norm as { phase?: unknown }).phase], [
    "gradient norm",
    "backward",
  ]);
  assert.equal(
    (norm as { message: string }).message,
    `invalid_record: Cannot replay: block_002 running squared norm is ${t.norm_squared}, committed ${low}`,
  );
  // A stage norm that is not its last running sum (refused at claim) is still named, at the last block.
  const bare = replay(2, { ...t, norm_squared: low });
  assert.deepEqual([(bare as { what?: string }).what, (bare as { block?: unknown }).block], [
    "gradient norm",
    0,
  ]);
  const t0 = fixture.out.traces[0]!;
  const h = replay(0, { ...t0, head_norm_squared: "0x0.0p+0" });
  assert.deepEqual([(h as { what?: string }).what, (h as { block?: unknown }).block], [
    "gradient norm",
    "head",
  ]);
});

Deno.test("referee: a forged component update is named optimizer update", () => {
  for (const stage of [0, 1]) {
    const t = fixture.out.traces[stage]!;
    const name = t.partition[t.partition.length - 1]!;
    const forged = sha256Hex(writeSafetensors({}));
    const components = { ...t.components, [name]: forged };
    const v = replay(stage, { ...t, components, blocks: lastBlock(t, { component: forged }) });
    assert.equal((v as { what?: string }).what, "optimizer update");
    assert.deepEqual([(v as { block?: unknown }).block, (v as { phase?: unknown }).phase], [0, "update"]);
  }
});

Deno.test("referee: malformed or missing inputs are a mismatch of the phase that needs them", () => {
  const t1 = fixture.out.traces[1]!;
  const missing = new Map(fixture.objects);
  missing.delete(t1.input);
  assert.equal((replay(1, t1, missing) as { what?: string }).what, "forward output");
  const wrongBytes = new Map(fixture.objects);
  wrongBytes.set(t1.gradient_out, writeValue({ shape: ACT, data: new Float32Array(192) }));
  assert.equal((replay(1, t1, wrongBytes) as { what?: string }).what, "input gradient");
  // A sealed gradient file that holds NaN: its bytes hash to the root the trace names, yet it cannot be read.
  const nan = new Uint8Array(fixture.objects.get(t1.gradient_out)!);
  new DataView(nan.buffer).setFloat32(nan.length - 4, NaN, true);
  const withNan = new Map(fixture.objects);
  withNan.set(sha256Hex(nan), nan);
  const v = replay(1, { ...t1, gradient_out: sha256Hex(nan) }, withNan);
  assert.equal(v.verdict === "mismatch" && v.what, "input gradient");
  assert.match((v as { message: string }).message, /non_finite_tensor/);
  const badShape = new Map(fixture.objects);
  const small = writeValue({ shape: [1], data: new Float32Array(1) });
  badShape.set(sha256Hex(small), small);
  assert.equal(
    (replay(1, { ...t1, input: sha256Hex(small) }, badShape) as { what?: string }).what,
    "forward output",
  );
});

Deno.test("referee: running out of memory is reported as an error, never as a mismatch", () => {
  const t = fixture.out.traces[1]!;
  const v = replayStage({
    parent: fixture.parent,
    batch: TINY_BATCH,
    stage: 1,
    trace: t,
    fetch: () => {
      throw new RangeError("Array buffer allocation failed");
    },
  });
  assert.deepEqual(v, { verdict: "error", message: "RangeError: Array buffer allocation failed" });
});

Deno.test("referee: a growth replays from the parent's last block alone and a forged one is named growth, whatever was wrong", () => {
  const parentRoot = id(fixture.parent as never);
  const last = fixture.objects.get(fixture.parent.components.block_002!)!;
  const honest = growManifest(fixture.parent, parentRoot, last, 2);
  assert.deepEqual(replayGrowth(fixture.parent, parentRoot, last, 2, honest.root), { verdict: "match" });
  const forged = replayGrowth(fixture.parent, parentRoot, last, 1, honest.root);
  assert.equal(forged.verdict === "mismatch" && forged.what, "growth");
  const wrongBlock = fixture.objects.get(fixture.parent.components.block_001!)!;
  assert.equal(
    (replayGrowth(fixture.parent, parentRoot, wrongBlock, 2, honest.root) as { what?: string }).what,
    "growth",
  );
  assert.equal(
    (replayGrowth(fixture.parent, parentRoot, undefined, 2, honest.root) as { what?: string }).what,
    "growth",
  );
});
