import assert from "node:assert/strict";
import { forwardLogits } from "../../kernels/generation.ts";
import { growManifest, growModel, identityBlock } from "../../kernels/growth.ts";
import { initModel } from "../../kernels/model.ts";
import { trainStep } from "../../kernels/step.ts";
import { buildManifest, componentFiles, loadModel, storeModel } from "../../kernels/manifest.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { errorCode } from "./_gradcheck.ts";
import { TINY, TINY_BATCH, TOKENIZER_ROOT } from "./_tiny.ts";

function bits(x: Float32Array): number[] {
  return Array.from(new Uint32Array(x.slice().buffer));
}

Deno.test("growth appends copies of the last block with o_proj and down_proj zeroed", () => {
  const model = initModel(TINY, 1);
  const grown = growModel(model, 2);
  assert.equal(grown.config.num_hidden_layers, 5);
  for (const name of ["block_003", "block_004"]) {
    const b = grown.components[name]!;
    assert.deepEqual(Array.from(b["self_attn.o_proj.weight"]!.data), new Array(16 * 16).fill(0));
    assert.deepEqual(Array.from(b["mlp.down_proj.weight"]!.data), new Array(16 * 24).fill(0));
    assert.deepEqual(
      b["self_attn.q_proj.weight"]!.data,
      model.components.block_002!["self_attn.q_proj.weight"]!.data,
    );
  }
  assert.notEqual(
    identityBlock(model.components.block_002!)["mlp.up_proj.weight"]!.data,
    model.components.block_002!["mlp.up_proj.weight"]!.data,
  );
});

Deno.test("growth keeps the logits bit-identical, also after the parent was trained", () => {
  let model = initModel(TINY, 2);
  const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
  const manifest = buildManifest(TINY, roots, {
    origin: { kind: "init", seed: 2 },
    tokenizer_root: TOKENIZER_ROOT,
  });
  const partitions = [["embed", "norm", "block_000", "block_001", "block_002"]];
  model = trainStep({ model, manifest, batch: TINY_BATCH, partitions, learningRate: 0.5, clip: 1, step: 0 })
    .candidate;
  const ids = [5, 1, 30, 2, 2, 8];
  for (const added of [1, 3]) {
    assert.deepEqual(bits(forwardLogits(growModel(model, added), ids)), bits(forwardLogits(model, ids)));
  }
});

Deno.test("growth refuses to add fewer than 1 or more than 16 blocks with invalid_model", () => {
  const model = initModel(TINY, 1);
  for (const n of [0, 17, 1.5]) assert.equal(errorCode(() => growModel(model, n)), "invalid_model");
});

Deno.test("growth manifest needs only the parent's last block and names the same roots as the grown model", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = new ObjectStore(dir);
    const model = initModel(TINY, 6);
    const info = { origin: { kind: "init", seed: 6 }, tokenizer_root: TOKENIZER_ROOT };
    const { manifest, root } = await storeModel(store, model, info);
    const g = growManifest(manifest, root, await store.get(manifest.components.block_002!), 2);
    assert.deepEqual(g.manifest.growth, { added: 2, from_layers: 3 });
    assert.equal(g.manifest.parent, root);
    assert.equal(g.root, id(g.manifest as never));
    const expected = componentFiles(growModel(model, 2));
    for (const [name, bytes] of Object.entries(expected)) {
      assert.equal(g.manifest.components[name], sha256Hex(bytes));
    }
    for (const [r, bytes] of g.objects) await store.putExpected(r, bytes);
    const loaded = await loadModel(store, g.root);
    assert.equal(loaded.config.num_hidden_layers, 5);
    const wrong = await store.get(manifest.components.block_001!);
    assert.equal(errorCode(() => growManifest(manifest, root, wrong, 1)), "invalid_model");
    assert.equal(errorCode(() => growManifest(manifest, root, wrong, 0)), "invalid_model");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
