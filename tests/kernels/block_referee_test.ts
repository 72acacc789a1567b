import assert from "node:assert/strict";
import { blockNeeded, replayBlock } from "../../kernels/block_referee.ts";
import { type BlockPhase, type BlockRef, runningNorms } from "../../kernels/boundary.ts";
import { normSquared } from "../../kernels/stage.ts";
import { replayStage } from "../../kernels/referee.ts";
import type { Tensors } from "../../kernels/safetensors.ts";
import type { StageTrace } from "../../kernels/trace.ts";
import { honestStep } from "./_step_fixture.ts";
import { TINY_BATCH } from "./_tiny.ts";

const fixture = honestStep();
// The block-boundary files, as a challenger's whole-stage replay computes them.
const objects = new Map(fixture.objects);
fixture.out.traces.forEach((trace, stage) =>
  replayStage({
    parent: fixture.parent,
    batch: TINY_BATCH,
    stage,
    trace,
    fetch: (r) => fixture.objects.get(r),
    keep: (r, b) => objects.set(r, b),
  })
);

function one(stage: number, trace: StageTrace, block: BlockRef, phase: BlockPhase, only = true) {
  const needed = new Set(blockNeeded(fixture.parent, trace, stage, block, phase) ?? []);
  // Only the needed objects are visible: the replay cannot read anything else.
  return replayBlock({
    parent: fixture.parent,
    batch: TINY_BATCH,
    stage,
    trace,
    block,
    phase,
    fetch: (r) => (!only || needed.has(r) ? objects.get(r) : undefined),
  });
}

const PHASES: BlockPhase[] = ["forward", "backward", "update"];

Deno.test("block referee: every block and the head of an honest step match in every phase, from the needed objects alone", () => {
  fixture.out.traces.forEach((t, stage) => {
    const blocks: BlockRef[] = [...t.blocks.keys(), ...(stage === 0 ? ["head" as const] : [])];
    for (const b of blocks) {
      for (const p of PHASES) {
        assert.deepEqual(one(stage, t, b, p), { verdict: "match" }, `${stage} ${b} ${p}`);
      }
    }
  });
});

Deno.test("block referee: needed is the block's component and input (and incoming gradient past forward); the head's embed, norm and final hidden state", () => {
  const [t0, t1] = fixture.out.traces as [StageTrace, StageTrace];
  const c = fixture.parent.components;
  assert.deepEqual(blockNeeded(fixture.parent, t1, 1, 0, "forward"), [c.block_001!, t1.input].sort());
  assert.deepEqual(
    blockNeeded(fixture.parent, t1, 1, 0, "update"),
    [c.block_001!, t1.input, t1.gradient_out].sort(),
  );
  assert.deepEqual(
    blockNeeded(fixture.parent, t0, 0, 0, "backward"),
    [c.block_000!, t0.embedding!, t0.gradient_out].sort(),
  );
  assert.deepEqual(
    blockNeeded(fixture.parent, t0, 0, "head", "forward"),
    [c.embed!, c.norm!, t0.head_input!].sort(),
  );
  assert.deepEqual(
    blockNeeded(fixture.parent, t0, 0, "head", "update"),
    [c.embed!, c.norm!, t0.head_input!, t0.blocks[0]!.gradient_in].sort(),
  );
  for (
    const [stage, t, b, p] of [[1, t1, 1, "forward"], [1, t1, "head", "forward"], [0, t0, 0, "sideways"], [
      1,
      t1,
      -1,
      "update",
    ]] as const
  ) {
    assert.equal(blockNeeded(fixture.parent, t, stage, b, p), null);
  }
});

Deno.test("block referee: a forged commitment is named with its block, in the order forward, backward, update", () => {
  const t0 = fixture.out.traces[0]!;
  const other = "ab".repeat(32);
  const at = (change: Partial<StageTrace["blocks"][number]>) => ({
    ...t0,
    blocks: [{ ...t0.blocks[0]!, ...change }],
  });
  const v = (t: StageTrace, b: BlockRef, p: BlockPhase) => {
    const r = one(0, t, b, p, false);
    return r.verdict === "mismatch" ? [r.what, r.block, r.phase] : [r.verdict];
  };
  assert.deepEqual(v(at({ output: other }), 0, "update"), ["forward output", 0, "forward"]);
  assert.deepEqual(v(at({ gradient_in: other }), 0, "update"), ["input gradient", 0, "backward"]);
  assert.deepEqual(v(at({ norm_squared: "0x1.0000000000000p+0" }), 0, "backward"), [
    "gradient norm",
    0,
    "backward",
  ]);
  assert.deepEqual(v(at({ component: other }), 0, "update"), ["optimizer update", 0, "update"]);
  // A forged update is not seen by a challenge that names only the forward or the backward.
  assert.deepEqual(v(at({ component: other }), 0, "backward"), ["match"]);
  assert.deepEqual(v({ ...t0, embedding: other }, "head", "forward"), ["forward output", "head", "forward"]);
  assert.deepEqual(v({ ...t0, loss: "0x1.0000000000000p+1" }, "head", "forward"), [
    "head loss",
    "head",
    "forward",
  ]);
  assert.deepEqual(v({ ...t0, head_gradient: other }, "head", "forward"), [
    "head gradient",
    "head",
    "forward",
  ]);
  assert.deepEqual(v({ ...t0, head_norm_squared: "0x1.0000000000000p+0" }, "head", "backward"), [
    "gradient norm",
    "head",
    "backward",
  ]);
  assert.deepEqual(v({ ...t0, components: { ...t0.components, norm: other } }, "head", "update"), [
    "optimizer update",
    "head",
    "update",
  ]);
});

Deno.test("block referee: a needed object that is not sealed is a mismatch of the phase that needs it", () => {
  const t1 = fixture.out.traces[1]!;
  const r = replayBlock({
    parent: fixture.parent,
    batch: TINY_BATCH,
    stage: 1,
    trace: t1,
    block: 0,
    phase: "update",
    fetch: (root) => root === t1.gradient_out ? undefined : objects.get(root),
  });
  assert.deepEqual(r.verdict === "mismatch" && [r.what, r.phase], ["input gradient", "backward"]);
  assert.match((r as { message: string }).message, /not_sealed/);
});

Deno.test("boundary: the running sums end at normSquared over the stage, bit for bit, and the head's is embed and norm's", () => {
  let s = 7;
  const rand = (n: number) =>
    Float32Array.from(
      { length: n },
      () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 3,
    );
  const grads: Record<string, Tensors> = {};
  const partition = ["embed", "norm", "block_000", "block_001", "block_002"];
  for (const n of partition) {
    grads[n] = { b: { shape: [999], data: rand(999) }, a: { shape: [37], data: rand(37) } };
  }
  const r = runningNorms(partition, grads);
  assert.equal(r.blocks.at(-1), normSquared(partition, grads));
  assert.equal(r.head, normSquared(["embed", "norm"], grads));
  const later = runningNorms(["block_003", "block_004"], {
    block_003: grads.block_000!,
    block_004: grads.block_001!,
  });
  assert.equal(later.head, null);
  assert.equal(
    later.blocks.at(-1),
    normSquared(["block_003", "block_004"], { block_003: grads.block_000!, block_004: grads.block_001! }),
  );
});
