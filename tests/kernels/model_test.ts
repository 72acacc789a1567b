import assert from "node:assert/strict";
import { canonicalBytes } from "../../core/canonical.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { configFromJson, configToJson, PRESETS } from "../../kernels/config.ts";
import { buildManifest, loadModel, parseManifest, storeModel } from "../../kernels/manifest.ts";
import { componentNames, initModel, modelParameters } from "../../kernels/model.ts";
import { tensorsRoot } from "../../kernels/safetensors.ts";
import { bitEqual } from "../../kernels/tensor.ts";
import { errorCode } from "./_gradcheck.ts";
import { TINY, TOKENIZER_ROOT } from "./_tiny.ts";

Deno.test("config JSON writes eps and theta as hex floats and reads back exactly", () => {
  const json = configToJson(PRESETS["smollm2-135m"]);
  assert.equal(json.rms_norm_eps, "0x1.4f8b588e368f1p-17");
  assert.equal(json.rope_theta, "0x1.86a0000000000p+16");
  assert.equal(json.num_attention_heads, 9);
  assert.deepEqual(configFromJson(json), PRESETS["smollm2-135m"]);
  assert.equal(modelParameters(PRESETS["smollm2-135m"]), 134_515_008);
  assert.equal(modelParameters(PRESETS.devnet), 1_311_872);
});

Deno.test("config JSON rejects missing fields, floats, odd head widths and heads that do not group", () => {
  const json = configToJson(TINY);
  const variants = [
    { ...json, rope_theta: 10000 },
    { ...json, rms_norm_eps: "1e-5" },
    { ...json, extra: 1 },
    { ...json, hidden_size: 12 },
    { ...json, num_key_value_heads: 3 },
    { ...json, vocab_size: 0 },
  ];
  for (const v of variants) {
    assert.equal(errorCode(() => configFromJson(v)), "invalid_model", JSON.stringify(v));
  }
  const { vocab_size: _, ...missing } = json;
  assert.equal(errorCode(() => configFromJson(missing)), "invalid_model");
});

Deno.test("initialisation is deterministic from the seed, uniform with std 0.02, norms at 1", () => {
  const a = initModel(TINY, 42), b = initModel(TINY, 42), c = initModel(TINY, 43);
  assert.deepEqual(componentNames(TINY), ["embed", "norm", "block_000", "block_001", "block_002"]);
  for (const name of componentNames(TINY)) {
    assert.equal(tensorsRoot(a.components[name]!), tensorsRoot(b.components[name]!));
  }
  assert.notEqual(tensorsRoot(a.components.embed!), tensorsRoot(c.components.embed!));
  const q = a.components.block_000!["self_attn.q_proj.weight"]!.data;
  const mean = q.reduce((s, v) => s + v, 0) / q.length;
  const std = Math.sqrt(q.reduce((s, v) => s + (v - mean) ** 2, 0) / q.length);
  assert.ok(Math.abs(std - 0.02) < 0.003, `std ${std}`);
  assert.ok(q.every((v) => Math.abs(v) <= Math.fround(0.02 * Math.sqrt(3))));
  assert.ok(a.components.norm!["norm.weight"]!.data.every((v) => v === 1));
  // Different tensors of the same shape draw from different streams.
  assert.notDeepEqual(q, a.components.block_000!["self_attn.o_proj.weight"]!.data);
});

Deno.test("initialisation of the devnet preset has a pinned root for its embedding", () => {
  const model = initModel(PRESETS.devnet, 1);
  assert.equal(
    tensorsRoot(model.components.embed!),
    "c9ff6263400565cd52de0772adfefde8eb4d7d213fd37297c33f34e564359a66",
  );
});

Deno.test("manifest stores every component and loads back the same bits", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = new ObjectStore(dir);
    const model = initModel(TINY, 5);
    const { manifest, root } = await storeModel(store, model, {
      origin: { kind: "init", seed: 5 },
      tokenizer_root: TOKENIZER_ROOT,
    });
    assert.deepEqual(Object.keys(manifest.components), componentNames(TINY));
    assert.equal(manifest.format, "neuroshard-model-v1");
    assert.equal(manifest.parent, null);
    assert.equal(manifest.parameters, modelParameters(TINY));
    const loaded = await loadModel(store, root);
    for (const name of componentNames(TINY)) {
      for (const [t, v] of Object.entries(model.components[name]!)) {
        assert.ok(bitEqual(loaded.components[name]![t]!, v));
      }
    }
    assert.deepEqual(canonicalBytes(loaded.manifest), canonicalBytes(manifest));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("manifest parsing rejects wrong format, components, parameter counts and roots", () => {
  const roots = Object.fromEntries(
    componentNames(TINY).map((n, i) => [n, String(i).repeat(64).slice(0, 64)]),
  );
  const m = buildManifest(TINY, roots, {
    origin: null,
    tokenizer_root: TOKENIZER_ROOT,
    growth: { added: 1 },
  });
  assert.deepEqual(parseManifest(m as never).manifest, m);
  const { block_002: _, ...fewer } = m.components;
  const variants = [
    { ...m, format: "other" },
    { ...m, parameters: 1 },
    { ...m, components: fewer },
    { ...m, components: { ...m.components, block_002: "xyz" } },
    { ...m, parent: "nope" },
    { ...m, tokenizer_root: 5 },
    { ...m, extra: true },
    { ...m, growth: 3 },
  ];
  for (const v of variants) {
    assert.equal(errorCode(() => parseManifest(v as never)), "invalid_model", JSON.stringify(v).slice(0, 80));
  }
  assert.equal(
    errorCode(() =>
      buildManifest(TINY, { ...roots, norm: "x" }, { origin: null, tokenizer_root: TOKENIZER_ROOT })
    ),
    "invalid_model",
  );
});
