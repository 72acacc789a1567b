import assert from "node:assert/strict";
import { canonical, decodeCanonical, type JsonValue } from "../../core/canonical.ts";
import { chunkRoot } from "../../core/chunk_tree.ts";
import { id } from "../../core/digest.ts";
import { batchArrays } from "../../kernels/batch.ts";
import { headDim } from "../../kernels/config.ts";
import { headForwardBackward } from "../../kernels/head.ts";
import { componentFiles, type Manifest, manifestOf as modelManifest } from "../../kernels/manifest.ts";
import { initModel, type Model } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import { sha256Hex } from "../../core/digest.ts";
import { stageBackward, stageForward } from "../../kernels/stage.ts";
import { trainStep } from "../../kernels/step.ts";
import { checkRecord } from "../../kernels/trace.ts";
import { rng } from "./_gradcheck.ts";
import { TINY, TINY_BATCH, TOKENIZER_ROOT } from "./_tiny.ts";

function manifestOf(model: Model, parent: string | null = null): Manifest {
  return modelManifest(model, { parent, origin: { kind: "init", seed: 3 }, tokenizer_root: TOKENIZER_ROOT });
}

const ALL = [["embed", "norm", "block_000", "block_001", "block_002"]];
const PLACEMENTS = [
  ALL,
  [["embed", "norm"], ["block_000", "block_001", "block_002"]],
  [["embed", "norm", "block_000"], ["block_001"], ["block_002"]],
  [["embed", "norm"], ["block_000"], ["block_001", "block_002"]],
];

Deno.test("step: every placement gives the same candidate bits as the unpartitioned step", () => {
  const model = initModel(TINY, 3);
  const manifest = manifestOf(model);
  for (const clip of [1e9, 0.05]) {
    const roots = PLACEMENTS.map((partitions) =>
      trainStep({ model, manifest, batch: TINY_BATCH, partitions, learningRate: 0.5, clip, step: 0 })
    );
    for (const r of roots.slice(1)) {
      assert.equal(r.candidateRoot !== roots[0]!.candidateRoot ? "differs" : "same", "same", `clip ${clip}`);
      assert.equal(r.record.loss, roots[0]!.record.loss);
      assert.deepEqual(r.candidateManifest.components, roots[0]!.candidateManifest.components);
    }
    if (clip < 1) assert.ok(roots[0]!.scale < 1, "the small clip is active");
  }
});

Deno.test("step: loss decreases over steps on a fixed batch", () => {
  let model = initModel(TINY, 3);
  let manifest = manifestOf(model);
  const losses: number[] = [];
  for (let s = 0; s < 6; s++) {
    const out = trainStep({
      model,
      manifest,
      batch: TINY_BATCH,
      partitions: PLACEMENTS[2]!,
      learningRate: 0.5,
      clip: 1,
      step: s,
    });
    losses.push(out.loss);
    model = out.candidate;
    manifest = out.candidateManifest;
  }
  assert.ok(Math.abs(losses[0]! - Math.log(32)) < 0.05, `initial loss ${losses[0]} is near log 32`);
  for (let i = 1; i < losses.length; i++) assert.ok(losses[i]! < losses[i - 1]!, `losses ${losses}`);
});

Deno.test("step: the record passes the graph checks and chains stages", () => {
  const model = initModel(TINY, 3);
  const manifest = manifestOf(model);
  const out = trainStep({
    model,
    manifest,
    batch: TINY_BATCH,
    partitions: PLACEMENTS[2]!,
    learningRate: 0.5,
    clip: 1,
    step: 4,
  });
  assert.deepEqual(
    checkRecord(out.record, out.traces, manifest, out.candidateManifest, { learning_rate: 0.5, clip: 1 }),
    { ok: true },
  );
  // A manifest that went through canonical JSON lists its components by name (block_000 before embed);
  // the graph checks must read the model's order, not the key order.
  const decoded = decodeCanonical(canonical(manifest)) as unknown as Manifest;
  assert.deepEqual(Object.keys(decoded.components).slice(0, 2), ["block_000", "block_001"]);
  assert.deepEqual(
    checkRecord(out.record, out.traces, decoded, out.candidateManifest, { learning_rate: 0.5, clip: 1 }),
    { ok: true },
  );
  assert.equal(out.traces[1]!.input, out.traces[0]!.output);
  assert.equal(out.traces[2]!.gradient_out, out.traces[0]!.head_gradient);
  assert.equal(out.traces[0]!.gradient_in, null);
  assert.equal(out.candidateManifest.parent, id(manifest as unknown as JsonValue));
  assert.equal(out.record.model_root, out.candidateRoot);
  for (const root of [...out.record.traces, out.recordRoot, out.candidateRoot, out.traces[1]!.gradient_in!]) {
    assert.equal(sha256Hex(out.objects.get(root)!), root);
  }
});

Deno.test("step: whole-model gradients match finite differences of the loss", () => {
  const model = initModel(TINY, 5);
  // Larger weights than the initialisation so that every gradient is well above float32 noise.
  const next = rng(31);
  for (const comp of Object.values(model.components)) {
    for (const t of Object.values(comp)) t.data.forEach((v, i) => t.data[i] = v * 5 + (next() - 0.5) * 0.1);
  }
  const { B, T, ids, labels } = batchArrays(TINY_BATCH);
  const shape = { config: TINY, B, T, ids, tables: rotaryTables(T, headDim(TINY), TINY.rope_theta) };
  const lossOf = () => {
    const f = stageForward(shape, ALL[0]!, model.components, null);
    return headForwardBackward(f.output, labels, model.components.norm!, model.components.embed!, TINY, B * T)
      .loss;
  };
  const f = stageForward(shape, ALL[0]!, model.components, null);
  const head = headForwardBackward(
    f.output,
    labels,
    model.components.norm!,
    model.components.embed!,
    TINY,
    B * T,
  );
  const { grads } = stageBackward(shape, ALL[0]!, model.components, f, head.dHidden, head);
  let checked = 0;
  for (const [comp, tensors] of Object.entries(model.components)) {
    for (const [name, t] of Object.entries(tensors)) {
      const g = grads[comp]![name]!.data;
      for (let k = 0; k < 3; k++) {
        const i = Math.floor(next() * t.data.length);
        const keep = t.data[i]!;
        t.data[i] = keep + 1e-3;
        const up = t.data[i]!, lp = lossOf();
        t.data[i] = keep - 1e-3;
        const down = t.data[i]!, lm = lossOf();
        t.data[i] = keep;
        const fd = (lp - lm) / (up - down);
        assert.ok(
          Math.abs(fd - g[i]!) <= 3e-3 * Math.abs(fd) + 3e-4,
          `${comp} ${name}[${i}]: ${g[i]} vs ${fd}`,
        );
        checked++;
      }
    }
  }
  assert.equal(checked, 3 * (2 + 9 * 3));
});

Deno.test("placement fills stage 0 with embed and norm, then blocks while they fit", () => {
  const block = 2 * 16 + 16 * 16 * 2 + 2 * 8 * 16 + 3 * 24 * 16;
  const head = 32 * 16 + 16;
  assert.deepEqual(place(TINY, [head + block, block, block]), PLACEMENTS[2]);
  assert.deepEqual(place(TINY, [head, 3 * block]), PLACEMENTS[1]);
  assert.deepEqual(place(TINY, [10 ** 9, 5]), ALL);
  for (const caps of [[head - 1, 10 ** 9], [head, block - 1, 10 ** 9], [head + block, block], []]) {
    assert.throws(
      () => place(TINY, caps),
      (e: Error & { code?: string }) => e.code === "placement_failed",
      `${caps}`,
    );
  }
});

Deno.test("step: a non-finite value anywhere stops the step with non_finite_tensor and changes no parameter", () => {
  const model = initModel(TINY, 3);
  const manifest = manifestOf(model);
  const before = componentFiles(model);
  model.components.block_001!["self_attn.q_proj.weight"]!.data[5] = Infinity;
  const run = () =>
    trainStep({
      model,
      manifest,
      batch: TINY_BATCH,
      partitions: PLACEMENTS[2]!,
      learningRate: 0.5,
      clip: 1,
      step: 0,
    });
  assert.throws(
    run,
    (e: Error & { code?: string }) => e.code === "non_finite_tensor" && /linear output/.test(e.message),
  );
  model.components.block_001!["self_attn.q_proj.weight"]!.data[5] = initModel(TINY, 3).components.block_001![
    "self_attn.q_proj.weight"
  ]!.data[5]!;
  assert.deepEqual(componentFiles(model), before);
  const huge = initModel(TINY, 3);
  huge.components.embed!["embed_tokens.weight"]!.data.fill(3e38);
  assert.throws(
    () =>
      trainStep({
        model: huge,
        manifest,
        batch: TINY_BATCH,
        partitions: ALL,
        learningRate: 0.5,
        clip: 1,
        step: 0,
      }),
    (e: Error & { code?: string }) => e.code === "non_finite_tensor",
  );
});

Deno.test("a step keeps each updated component as a view into its file's bytes, equal to writing it afresh", () => {
  const model = initModel(TINY, 31);
  const before = componentFiles(model);
  const out = trainStep({
    model,
    manifest: manifestOf(model),
    batch: TINY_BATCH,
    partitions: [["embed", "norm", "block_000"], ["block_001", "block_002"]],
    learningRate: 0.5,
    clip: 1,
    step: 0,
  });
  const after = componentFiles(out.candidate); // written afresh from the candidate's tensors
  for (const [name, bytes] of Object.entries(after)) {
    const stored = out.objects.get(out.candidateManifest.components[name]!)!;
    assert.deepEqual(stored, bytes, name);
    for (const t of Object.values(out.candidate.components[name]!)) {
      assert.equal(t.data.buffer, stored.buffer, name);
    }
  }
  assert.deepEqual(componentFiles(model), before); // the parent is untouched
});

Deno.test("stageBackward consuming its forward and keeping gradients elsewhere gives the same gradients", () => {
  const model = initModel(TINY, 32);
  const { B, T, ids, labels } = batchArrays(TINY_BATCH);
  const shape = { config: TINY, B, T, ids, tables: rotaryTables(T, headDim(TINY), TINY.rope_theta) };
  const partition = ["embed", "norm", "block_000", "block_001", "block_002"];
  const run = (consume: boolean) => {
    const f = stageForward(shape, partition, model.components, null);
    const head = headForwardBackward(
      f.output,
      labels,
      model.components.norm!,
      model.components.embed!,
      TINY,
      B * T,
    );
    const kept: string[] = [];
    const r = stageBackward(shape, partition, model.components, f, head.dHidden, head, {
      consume,
      keep: (name, g) => {
        kept.push(name);
        return Object.fromEntries(
          Object.entries(g).map(([t, v]) => [t, { shape: v.shape, data: v.data.slice() }]),
        );
      },
    });
    return { r, kept, caches: f.caches.filter((c) => c !== undefined).length };
  };
  const plain = run(false), consumed = run(true);
  assert.deepEqual(consumed.kept, ["block_002", "block_001", "block_000", "embed", "norm"]);
  assert.equal(plain.caches, 3);
  assert.equal(consumed.caches, 0);
  for (const name of partition) {
    for (const [t, v] of Object.entries(plain.r.grads[name]!)) {
      assert.deepEqual(
        new Uint32Array(consumed.r.grads[name]![t]!.data.slice().buffer),
        new Uint32Array(v.data.slice().buffer),
        `${name} ${t}`,
      );
    }
  }
});

Deno.test("step: each parent component's committed chunk root is the chunk tree of its file, hashed without writing it", () => {
  const model = initModel(TINY, 5);
  const manifest = manifestOf(model);
  const files = componentFiles(model);
  const out = trainStep({
    model,
    manifest,
    batch: TINY_BATCH,
    partitions: PLACEMENTS[2]!,
    learningRate: 0.5,
    clip: 1,
    step: 0,
  });
  for (const [i, t] of out.traces.entries()) {
    for (const name of t.partition) {
      assert.equal(t.chunk_roots[manifest.components[name]!], chunkRoot(files[name]!), `stage ${i} ${name}`);
      const updated = out.objects.get(t.components[name]!)!;
      assert.equal(t.chunk_roots[t.components[name]!], chunkRoot(updated), `stage ${i} updated ${name}`);
    }
  }
});
