/**
 * What the SmolLM2 devnet genesis pins (`deno task devnet --model smollm2`): the imported SmolLM2-135M-Instruct
 * (the Q4_1 GGUF of `deno task model:fetch-smollm2`, dequantised exactly as `deno task model:import --gguf`
 * does, so its model root is the one that task prints), its text codec rebuilt from the GGUF's tokenizer, and
 * one training batch of two response windows cut by that codec from the bundled generator's chat
 * conversations, with a small learning rate so that the trained model still answers as it did.
 *
 * The placement facts need no weights: `smollm2Placement` and `grownPlacement` work from the pinned config, so
 * the default suite checks them without the fetched file.
 *
 * @example
 * ```ts
 * import { smollm2Contents } from "./smollm2_contents.ts";
 * // const c = smollm2Contents(await Deno.readFile(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2-135M-Instruct.Q4_1.gguf");
 * // c.model.root; // the genesis learning root
 * ```
 */
import { canonicalBytes, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { type Batch, validateBatch } from "../../kernels/batch.ts";
import { type ModelConfig, PRESETS } from "../../kernels/config.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../../kernels/gguf_tokenizer.ts";
import { buildManifest, componentFiles, manifestRoot } from "../../kernels/manifest.ts";
import { blockName, componentParameters } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { type Batch as TextBatch, makeBatch } from "../../text/batch.ts";
import { TextCodec } from "../../text/codec.ts";
import { buildCodec } from "../../text/codec_manifest.ts";
import { buildWindows, IGNORE, type WindowOptions } from "../../text/windows.ts";
import type { DevnetContents } from "./contents.ts";
import { DEVNET_SOURCE, devnetRow } from "./generator.ts";

/** The config of SmolLM2-135M (30 blocks of 3,540,096 parameters, a 28,311,552-parameter tied embedding). */
export const SMOLLM2_CONFIG: ModelConfig = PRESETS["smollm2-135m"];
/** The parameters each SmolLM2 devnet worker declares it holds (the reference's 48M cap). */
export const SMOLLM2_CAPACITY = 48_000_000;
/** Identity blocks the scenario's growth adds. */
export const SMOLLM2_GROWTH_BLOCKS = 4;
/** Windows of the batch: the profile's 64 prompt and 64 target tokens, one window per conversation. */
export const SMOLLM2_WINDOWS: WindowOptions = { context: 64, response: 64, maxWindows: 1 };
/** Windows (rows) in the training batch, as in the reference's step. */
export const SMOLLM2_BATCH_ROWS = 2;
/** The first generator row cut into the batch. */
export const SMOLLM2_FIRST_ROW = 0;
/** SGD learning rate: 2^-6 under a clip of 1 moves the 135M weights by a norm of at most 1/64 per step. */
export const SMOLLM2_LEARNING_RATE = 2 ** -6;
/** Global gradient clip. */
export const SMOLLM2_CLIP = 1;

/** The partition of every stage of `config` on `workers` workers of `SMOLLM2_CAPACITY` each. */
export function smollm2Placement(config: ModelConfig = SMOLLM2_CONFIG, workers = 4): string[][] {
  return place(config, Array.from({ length: workers }, () => SMOLLM2_CAPACITY));
}

/** The config after the scenario's growth (34 blocks). */
export function grownConfig(config: ModelConfig = SMOLLM2_CONFIG): ModelConfig {
  return { ...config, num_hidden_layers: config.num_hidden_layers + SMOLLM2_GROWTH_BLOCKS };
}

/** Parameters a growth by `added` blocks adds (every block of a config has the same count). */
export function growthParameters(config: ModelConfig, added: number): number {
  return added * componentParameters(config, blockName(0));
}

/** One batch of `rows` windows from generator rows starting at `first` (one window a conversation). */
export function smollm2Batch(
  codec: TextCodec,
  rows = SMOLLM2_BATCH_ROWS,
  first = SMOLLM2_FIRST_ROW,
): TextBatch {
  const windows = [];
  for (let row = first; windows.length < rows; row++) {
    windows.push(...buildWindows(codec, devnetRow(DEVNET_SOURCE, row), SMOLLM2_WINDOWS).windows.slice(0, 1));
  }
  return makeBatch(codec.root, windows, codec.manifest.vocabulary);
}

/** A codec-bound batch in the kernels' form (each label moved to the position before), checked for `config`. */
export function smollm2KernelBatch(batch: TextBatch, config: ModelConfig = SMOLLM2_CONFIG): Batch {
  return validateBatch({
    input_ids: batch.rows.map((r) => [...r.tokens]),
    labels: batch.rows.map((r) => [...r.labels.slice(1), IGNORE]),
  }, config);
}

/**
 * The contents from the GGUF's bytes (`file` is its base name, recorded in the manifest's origin as
 * `model:import` records it). Holds the float32 model only while the component files are written: about
 * 1.1 GB at the peak.
 */
export function smollm2Contents(gguf: Uint8Array, file: string): DevnetContents {
  const sha256 = sha256Hex(gguf);
  const parsed = readGguf(gguf);
  const t = tokenizerFromGguf(parsed);
  const codec = buildCodec(t.tokenizer, t.chatTemplate, t.special);
  const objects = new Map<string, Uint8Array>();
  objects.set(sha256Hex(codec.backend), codec.backend);
  objects.set(codec.root, canonicalBytes(codec.manifest));
  const text = TextCodec.fromParts(codec.manifest as unknown as JsonValue, codec.backend, codec.root);
  const model = modelFromGguf(parsed);
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) {
    roots[name] = sha256Hex(bytes);
    objects.set(roots[name], bytes);
  }
  const origin: JsonObject = { format: "gguf", file, sha256 };
  const manifest = buildManifest(model.config, roots, { origin, tokenizer_root: codec.root });
  const root = manifestRoot(manifest);
  objects.set(root, canonicalBytes(manifest));
  return {
    codec,
    model: { manifest, root },
    batches: [smollm2KernelBatch(smollm2Batch(text), model.config)],
    learningRate: toHexFloat(SMOLLM2_LEARNING_RATE),
    clip: toHexFloat(SMOLLM2_CLIP),
    objects,
  };
}
