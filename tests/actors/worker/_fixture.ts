/**
 * Fixtures for actor tests: a tiny model (fast enough that a whole step takes milliseconds), its parent
 * manifest written into worker homes, a batch, the placement over N workers and the in-process reference
 * step (`trainStep`) that the workers' distributed step must equal byte for byte.
 */
import type { JsonValue } from "../../../core/canonical.ts";
import { ObjectStore } from "../../../core/object_store.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import type { ModelConfig } from "../../../kernels/config.ts";
import { type Manifest, storeModel } from "../../../kernels/manifest.ts";
import { initModel, type Model } from "../../../kernels/model.ts";
import { place } from "../../../kernels/placement.ts";
import { trainStep } from "../../../kernels/step.ts";

/** The tiny model with a 4096-token vocabulary: its embedding is just over 1 MiB, so it uploads in 2 chunks. */
export const WIDE_VOCAB: ModelConfig = {
  vocab_size: 4096,
  hidden_size: 64,
  intermediate_size: 64,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 32,
};

/** A model small enough for unit tests: 3 blocks. */
export const TINY: ModelConfig = {
  vocab_size: 64,
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 32,
};

/** Learning rate and clip as genesis spells them. */
export const LR = toHexFloat(0.05);
export const CLIP = toHexFloat(1);

/** The tiny model and its manifest. */
export interface Fixture {
  readonly model: Model;
  readonly manifest: Manifest;
  readonly root: string;
  readonly batch: Batch;
}

/** A batch of 2 rows of 8 tokens with some ignored labels (`seed` changes the ids). */
export function tinyBatch(seed = 0): Batch {
  const row = (r: number) => Array.from({ length: 8 }, (_, t) => (7 * r + 3 * t + 11 * seed) % 64);
  const input_ids = [row(1), row(2)];
  const labels = input_ids.map((ids, r) => ids.map((x, t) => (t < 2 && r === 0 ? -100 : (x + 1) % 64)));
  return { input_ids, labels };
}

/** Writes the tiny model into every object store directory given, returning it. */
export async function tinyFixture(
  objectDirs: readonly string[],
  seed = 3,
  config: ModelConfig = TINY,
): Promise<Fixture> {
  const model = initModel(config, seed);
  let out: { manifest: Manifest; root: string } | null = null;
  for (const dir of objectDirs) {
    out = await storeModel(new ObjectStore(dir), model, {
      origin: { kind: "init", seed } as JsonValue,
      tokenizer_root: "0".repeat(64),
    });
  }
  if (out === null) throw new Error("tinyFixture needs at least one object directory");
  return { model, manifest: out.manifest, root: out.root, batch: tinyBatch() };
}

/** The placement of the tiny model over `n` workers (one block each after stage 0's embed, norm, block). */
export function tinyPartitions(n: number): string[][] {
  const per = 16 * 16 * 2 + 16 * 8 * 2 + 16 * 32 * 3 + 32 + 100; // one block plus slack
  const head = 64 * 16 + 16;
  return place(TINY, Array.from({ length: n }, (_, i) => (i === 0 ? head + per * (4 - n) : per)));
}

/** The reference step in one process. */
export function referenceStep(f: Fixture, partitions: readonly (readonly string[])[], step = 0) {
  return trainStep({
    model: f.model,
    manifest: f.manifest,
    batch: f.batch,
    partitions,
    learningRate: 0.05,
    clip: 1,
    step,
  });
}
