import assert from "node:assert/strict";
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { checkRecord, type StageTrace, type StepRecord } from "../../kernels/trace.ts";
import { honestStep } from "./_step_fixture.ts";
import { stageObjects } from "../../kernels/trace_chunks.ts";
import { chunkRoot } from "../../core/chunk_tree.ts";

const { parent, out, objects: files } = honestStep();
const PARAMS = { learning_rate: 0.25, clip: 0.5 };
const ONE = "0x1.0000000000000p+0";

/** Re-ids the traces after an edit so that only the edited rule can fail. */
function check(
  traces: StageTrace[],
  record: Partial<StepRecord> = {},
  candidate: Manifest = out.candidateManifest,
) {
  const r = { ...out.record, traces: traces.map((t) => id(t as unknown as JsonValue)), ...record };
  return checkRecord(r, traces, parent, candidate, PARAMS);
}

/** "ok", or the code and message of the rejection (so each test can see which rule fired). */
function codeOf(v: ReturnType<typeof check>): string {
  return v.ok ? "ok" : `${v.code}: ${v.message}`;
}

const [t0, t1, t2] = out.traces as [StageTrace, StageTrace, StageTrace];

Deno.test("record: an honest record passes every graph check", () => {
  assert.equal(codeOf(check(out.traces)), "ok");
});

Deno.test("record: a trace that does not match its id is rejected", () => {
  const r = { ...out.record, traces: [out.record.traces[1]!, out.record.traces[0]!, out.record.traces[2]!] };
  const v = checkRecord(r, out.traces, parent, out.candidateManifest, PARAMS);
  assert.match(codeOf(v), /^invalid_record: .*trace 0 does not match its id/);
});

Deno.test("record: partitions must cover every component once, in numeric order, embed and norm on stage 0", () => {
  const swapped = [
    t0,
    { ...t1, partition: ["block_002"], components: { block_002: t2.components.block_002! } },
    { ...t2, partition: ["block_001"], components: { block_001: t1.components.block_001! } },
  ];
  assert.match(
    codeOf(check(swapped)),
    /^invalid_record: .*partitions cover embed,norm,block_000,block_002,block_001/,
  );
  const missing = [t0, t1];
  assert.match(codeOf(check(missing, { norms: out.record.norms.slice(0, 2) })), /partitions cover/);
  const noNorm = [
    {
      ...t0,
      partition: ["embed", "block_000"],
      components: { embed: t0.components.embed!, block_000: t0.components.block_000! },
    },
    {
      ...t1,
      partition: ["norm", "block_001"],
      components: { norm: t0.components.norm!, block_001: t1.components.block_001! },
    },
    t2,
  ];
  assert.match(codeOf(check(noNorm)), /partitions cover embed,block_000,norm/);
  const mismatched = [t0, { ...t1, partition: ["block_002"] }, t2];
  assert.match(codeOf(check(mismatched)), /trace 1 components do not match its partition/);
  assert.match(
    codeOf(check([{ ...t0, partition: [], components: {} }, t1, t2])),
    /trace 0 partition is empty/,
  );
});

Deno.test("record: the activation and gradient chain must link the stages", () => {
  assert.match(codeOf(check([t0, { ...t1, input: t2.output }, t2])), /stage 1 input is not stage 0's output/);
  assert.match(
    codeOf(check([t0, { ...t1, gradient_out: t0.head_gradient! }, t2])),
    /stage 1 gradient_out is not/,
  );
  assert.match(
    codeOf(check([t0, t1, { ...t2, gradient_out: t1.gradient_in! }])),
    /stage 2 gradient_out is not/,
  );
  assert.match(
    codeOf(check([{ ...t0, head_input: t1.output }, t1, t2])),
    /head_input is not the last stage's output/,
  );
  assert.match(codeOf(check([{ ...t0, input: t1.output }, t1, t2])), /stage 0 input is not the batch/);
  assert.match(
    codeOf(check([{ ...t0, gradient_in: t1.gradient_in }, t1, t2])),
    /trace 0 gradient_in is wrong/,
  );
});

Deno.test("record: norms, scale, loss, learning rate, clip and step must agree", () => {
  const ts = out.traces;
  assert.match(
    codeOf(check(ts.map((t) => ({ ...t, scale: ONE })), { scale: ONE })),
    /scale is 0x1.0+p\+0, recomputed/,
  );
  assert.match(codeOf(check(ts, { scale: ONE })), /trace 0 lr or scale differ/);
  const norms = [out.record.norms[1]!, out.record.norms[0]!, out.record.norms[2]!];
  assert.match(codeOf(check(ts, { norms })), /norm 0 is not trace 0's/);
  assert.match(codeOf(check(ts, { loss: ONE })), /loss is not stage 0's/);
  assert.match(codeOf(check(ts, { clip: ONE })), /clip is 0x1.0+p\+0/);
  const other = checkRecord(out.record, ts, parent, out.candidateManifest, { learning_rate: 0.5, clip: 0.5 });
  assert.match(codeOf(other), /learning_rate is/);
  assert.match(
    codeOf(check(ts.map((t, i) => i === 1 ? { ...t, step: 8 } : t))),
    /trace 1 has another parent or step/,
  );
});

Deno.test("record: the candidate must be the parent with only the new component roots", () => {
  const changed = { ...out.candidateManifest, tokenizer_root: "cd".repeat(32) };
  const candidate = /the candidate manifest is not the parent with the new component roots/;
  assert.match(
    codeOf(check(out.traces, { model_root: id(changed as unknown as JsonValue) }, changed)),
    candidate,
  );
  const stale = {
    ...t1,
    components: { block_001: parent.components.block_001! },
    blocks: [{ ...t1.blocks[0]!, component: parent.components.block_001! }],
  };
  assert.match(codeOf(check([t0, stale, t2])), candidate);
  assert.match(
    codeOf(check(out.traces, { parent: out.candidateRoot })),
    /parent is not the parent manifest's root/,
  );
  assert.match(
    codeOf(check(out.traces, { model_root: out.record.parent })),
    /model_root is not the candidate's root/,
  );
});

Deno.test("record: a malformed trace is rejected", () => {
  assert.match(codeOf(check([t0, { ...t1, loss: "0x0.0p+0" }, t2])), /trace 1 has fields .*loss/);
  assert.match(codeOf(check([t0, { ...t1, scale: "1.0" }, t2])), /trace 1 scale is not a hex float/);
  assert.match(codeOf(check([t0, { ...t1, gradient_in: null }, t2])), /trace 1 gradient_in is wrong/);
  assert.match(codeOf(check([t0, { ...t1, phase: "test" as "train" }, t2])), /trace 1 phase is "test"/);
  assert.match(codeOf(check([{ ...t0, loss: "nan" }, t1, t2])), /trace 0 head fields are malformed/);
  assert.match(codeOf(check([t0, { ...t1, output: "x" }, t2])), /trace 1 output is not a root/);
  assert.match(codeOf(check([], { norms: [] })), /has 0 traces/);
});

Deno.test("record: block-boundary commitments that do not chain or whose sums differ from the stage's are refused", () => {
  const other = "ef".repeat(32);
  const withBlock = (
    t: StageTrace,
    j: number,
    change: Partial<StageTrace["blocks"][number]>,
  ): StageTrace => ({
    ...t,
    blocks: t.blocks.map((b, k) => k === j ? { ...b, ...change } : b),
  });
  assert.match(
    codeOf(check([withBlock(t0, 0, { output: other }), t1, t2])),
    /stage 0's last block output is not the stage's output/,
  );
  assert.match(
    codeOf(check([t0, withBlock(t1, 0, { gradient_in: other }), t2])),
    /stage 1's first block input gradient is not the stage's gradient_in/,
  );
  assert.match(
    codeOf(check([t0, t1, withBlock(t2, 0, { component: other })])),
    /stage 2 block 0 component is not the stage's block_002/,
  );
  assert.match(
    codeOf(check([t0, t1, withBlock(t2, 0, { norm_squared: "0x1.0000000000000p+9" })])),
    /stage 2's block sums end at 0x1.0+p\+9, the stage's norm is/,
  );
  assert.match(
    codeOf(check([{ ...t0, head_norm_squared: "0x1.0000000000000p+9" }, t1, t2])),
    /stage 0 block 0 running squared norm .* is below the one before it/,
  );
  assert.match(
    codeOf(check([{ ...t0, head_norm_squared: "-0x1.0000000000000p+0" }, t1, t2])),
    /stage 0's head squared norm is -0x1/,
  );
  assert.match(
    codeOf(check([t0, { ...t1, blocks: [] }, t2])),
    /trace 1 has 0 block commitments for 1 blocks/,
  );
  assert.match(
    codeOf(check([t0, { ...t1, blocks: [{ ...t1.blocks[0]!, extra: 1 } as never] }, t2])),
    /trace 1 block 0 has fields component,extra,gradient_in,norm_squared,output/,
  );
  assert.match(
    codeOf(check([t0, withBlock(t1, 0, { norm_squared: "1.5" }), t2])),
    /trace 1 block 0 commitments are malformed/,
  );
  const { embedding: _e, ...noEmbedding } = t0;
  assert.match(codeOf(check([noEmbedding as StageTrace, t1, t2])), /trace 0 has fields/);
});

Deno.test("record: stage norms are the running block sums, bit for bit the sum over the whole stage", () => {
  for (const t of out.traces) {
    assert.equal(t.blocks.at(-1)?.norm_squared ?? t.head_norm_squared, t.norm_squared);
  }
  assert.deepEqual(out.traces.map((t) => t.norm_squared), out.record.norms);
});

Deno.test("record: chunk_roots must key exactly the stage's objects with roots, one chunk root per object across stages", () => {
  const objects = stageObjects(parent, t1, 1);
  assert.deepEqual(Object.keys(t1.chunk_roots).sort(), objects);
  // Stage 1 names its parent and updated component, its input, its block's output and input gradient (its
  // output and gradient_in) and the gradient it receives: 6 objects.
  assert.deepEqual(
    objects,
    [
      parent.components.block_001!,
      t1.components.block_001!,
      t1.input,
      t1.output,
      t1.gradient_out,
      t1.gradient_in!,
    ].filter((r, i, a) => a.indexOf(r) === i).sort(),
  );
  const [first, ...rest] = objects;
  const without = Object.fromEntries(rest.map((r) => [r, t1.chunk_roots[r]!]));
  assert.match(
    codeOf(check([t0, { ...t1, chunk_roots: without }, t2])),
    /^invalid_record: .*trace 1 chunk_roots names 5 objects, expected the stage's 6/,
  );
  const extra = { ...t1.chunk_roots, ["ab".repeat(32)]: "cd".repeat(32) };
  assert.match(codeOf(check([t0, { ...t1, chunk_roots: extra }, t2])), /trace 1 chunk_roots names 7 objects/);
  const swapped = { ...without, ["ab".repeat(32)]: "cd".repeat(32) };
  assert.match(codeOf(check([t0, { ...t1, chunk_roots: swapped }, t2])), /expected the stage's 6 \(abab/);
  const notRoot = { ...t1.chunk_roots, [first!]: "0x1" };
  assert.match(
    codeOf(check([t0, { ...t1, chunk_roots: notRoot }, t2])),
    /trace 1 chunk root of .* is not a root/,
  );
  assert.match(
    codeOf(check([t0, { ...t1, chunk_roots: null as never }, t2])),
    /trace 1 chunk_roots is not an object/,
  );
  // Stage 1's input is stage 0's output: a different chunk root for it in stage 1 is refused.
  const other = { ...t1.chunk_roots, [t1.input]: "ef".repeat(32) };
  assert.match(
    codeOf(check([t0, { ...t1, chunk_roots: other }, t2])),
    new RegExp(
      `trace 1 chunk root of ${t1.input} is efef.*, an earlier stage committed ${t0.chunk_roots[t1.input]}`,
    ),
  );
  const { chunk_roots: _, ...bare } = t1;
  assert.match(codeOf(check([t0, bare as StageTrace, t2])), /trace 1 has fields/);
});

Deno.test("record: each chunk root is the tree of the object's bytes", () => {
  for (const [i, t] of out.traces.entries()) {
    for (const r of stageObjects(parent, t, i)) {
      const bytes = files.get(r);
      // The step keeps the files it commits and the parent's; a boundary activation inside a stage (stage
      // 0's embedding) is hashed as it is computed and not kept.
      const inner = r === t.embedding || t.blocks.some((b) => b.output === r || b.gradient_in === r);
      if (bytes === undefined && inner) continue;
      assert.ok(bytes, `stage ${i} object ${r}`);
      assert.equal(t.chunk_roots[r], chunkRoot(bytes), `stage ${i} object ${r}`);
    }
  }
});
