/**
 * The SmolLM2 devnet's genesis and placement, checked without the model file: the pinned genesis fields make a
 * valid genesis with the SmolLM2 devnet's params, the pinned weights are the ones `genesis/pins/smollm2.json`
 * pins, and 48M-parameter workers place the 30-block model on 3 stages and the grown 34-block one on 4.
 */
import assert from "node:assert/strict";
import { parseJson } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { configFromJson } from "../../../kernels/config.ts";
import { validateBatch } from "../../../kernels/batch.ts";
import { parseGenesis } from "../../../genesis/schema.ts";
import { writeDevnetGenesis } from "../../../genesis/ledger_devnet.ts";
import {
  cohortTrainingFields,
  pinnedTrainingFields,
  SMOLLM2_CURATOR_WINDOWS,
  SMOLLM2_PARAMS,
} from "../../../genesis/devnet/smollm2_build.ts";
import { devnetSourceFiles } from "../../../genesis/devnet/sources.ts";
import {
  grownConfig,
  growthParameters,
  SMOLLM2_CAPACITY,
  SMOLLM2_CONFIG,
  SMOLLM2_GROWTH_BLOCKS,
  smollm2Placement,
} from "../../../genesis/devnet/smollm2_contents.ts";
import { place } from "../../../kernels/placement.ts";
import smollm2Pin from "../../../genesis/pins/smollm2.json" with { type: "json" };

const blocksOf = (stages: string[][]) => stages.map((s) => s.filter((n) => n.startsWith("block_")).length);

Deno.test("the pinned SmolLM2 genesis is valid: the pinned weights, 134,515,008 parameters, one 2x128 batch, longer windows", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fields = pinnedTrainingFields();
    const built = await writeDevnetGenesis({
      out: dir,
      validators: 4,
      time: 0,
      ...fields,
      params: SMOLLM2_PARAMS,
    });
    const genesis = parseGenesis(parseJson(await Deno.readTextFile(built.genesisPath)));
    const model = fields.model as { manifest: { components: Record<string, string>; parameters: number } };
    assert.equal(model.manifest.parameters, 134_515_008);
    assert.equal(id(model.manifest.components), smollm2Pin.components_id);
    assert.deepEqual(
      configFromJson((fields.model as { manifest: { config: never } }).manifest.config),
      SMOLLM2_CONFIG,
    );
    assert.equal(genesis.training!.batches.length, 1);
    const batch = validateBatch(genesis.training!.batches[0] as never, SMOLLM2_CONFIG);
    assert.deepEqual([batch.input_ids.length, batch.input_ids[0]!.length], [2, 128]);
    assert.equal(genesis.params.challenge_blocks, 300);
    assert.equal(genesis.params.availability_blocks, 720);
    assert.equal(genesis.params.lease_blocks, 1_200);
    assert.equal(genesis.params.max_claim_blocks, 1_500);
    assert.deepEqual([genesis.params.min_inference_blocks, genesis.params.max_inference_blocks], [
      400,
      1_200,
    ]);
    assert.equal(genesis.data, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the SmolLM2 cohort genesis is valid: no genesis batch, the small devnet's pinned sources, 8 evaluation documents, one step a cohort", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const sources = devnetSourceFiles();
    const built = await writeDevnetGenesis({
      out: dir,
      validators: 4,
      time: 0,
      ...cohortTrainingFields(pinnedTrainingFields(), sources),
      params: SMOLLM2_PARAMS,
    });
    const genesis = parseGenesis(parseJson(await Deno.readTextFile(built.genesisPath)));
    assert.equal(genesis.training!.batches.length, 0);
    const data = genesis.data as unknown as {
      sources: { name: string; sha256: string }[];
      cursors: Record<string, number>;
      evaluation_documents: number;
    };
    assert.deepEqual(
      data.sources.map((x) => [x.name, x.sha256]),
      sources.map((f) => [f.spec.name, f.spec.sha256]),
    );
    assert.deepEqual(data.cursors, { "devnet-chat": 0, "devnet-retention": 0, "devnet-fresh": 0 });
    assert.equal(data.evaluation_documents, 8);
    assert.equal(genesis.params.steps_per_cohort, 1);
    assert.equal(genesis.params.proposal_blocks, 240);
    assert.equal(genesis.params.evaluation_blocks, 3_600);
    // Every evaluation window is one row of 128 tokens, inside the ≤ 128 a gate group's rows may have.
    assert.equal(SMOLLM2_CURATOR_WINDOWS.context + SMOLLM2_CURATOR_WINDOWS.response, 128);
    assert.equal(SMOLLM2_CURATOR_WINDOWS.maxWindows, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("48M-parameter workers place SmolLM2 on 3 stages (5, 13, 12 blocks) and the grown model on 4 (5, 13, 13, 3)", () => {
  const before = smollm2Placement();
  assert.deepEqual(blocksOf(before), [5, 13, 12]);
  assert.deepEqual(before[0]!.slice(0, 2), ["embed", "norm"]);
  const grown = grownConfig();
  assert.equal(grown.num_hidden_layers, 34);
  assert.deepEqual(blocksOf(smollm2Placement(grown)), [5, 13, 13, 3]);
  assert.equal(growthParameters(SMOLLM2_CONFIG, SMOLLM2_GROWTH_BLOCKS), 14_160_384);
  assert.equal(134_515_008 + growthParameters(SMOLLM2_CONFIG, SMOLLM2_GROWTH_BLOCKS), 148_675_392);
});

Deno.test("three 48M-parameter workers cannot hold the grown SmolLM2: placement_failed", () => {
  const three = [SMOLLM2_CAPACITY, SMOLLM2_CAPACITY, SMOLLM2_CAPACITY];
  assert.deepEqual(blocksOf(place(SMOLLM2_CONFIG, three)), [5, 13, 12]);
  assert.throws(
    () => place(grownConfig(), three),
    (e) =>
      e instanceof ProtocolError && e.code === "placement_failed" &&
      /3 blocks are left after 3 workers/.test(e.message),
  );
});
