/**
 * What the devnet genesis pins, computed from the repository alone: the text codec trained from the generator,
 * the devnet model initialised from a fixed seed, the training batches cut from generator rows the tokenizer
 * never saw (response windows made codec-bound batches, then written in the kernels' `{input_ids, labels}`
 * form where `labels[t]` is the target of position t), and the step's learning rate and clip. Everything here is a pure function of the code, so every
 * machine that builds the devnet gets the same roots (only the keys differ from one build to the next).
 *
 * @example
 * ```ts
 * import { devnetContents } from "./contents.ts";
 * const c = devnetContents();
 * c.model.root; // the genesis learning root
 * c.batches.length; // DEVNET_BATCHES
 * ```
 */
import { canonicalBytes, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import type { ObjectStore } from "../../core/object_store.ts";
import { PRESETS } from "../../kernels/config.ts";
import { buildManifest, componentFiles, type Manifest, manifestRoot } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { sha256Hex } from "../../core/digest.ts";
import { type Batch as TextBatch, makeBatch, MAX_BATCH_ROWS } from "../../text/batch.ts";
import { type Batch, validateBatch } from "../../kernels/batch.ts";
import { TextCodec } from "../../text/codec.ts";
import type { BuiltCodec } from "../../text/codec_manifest.ts";
import { buildWindows, IGNORE, type WindowOptions } from "../../text/windows.ts";
import { buildDevnetCodec, DEVNET_TOKENIZER_ROWS } from "./codec.ts";
import { DEVNET_SOURCE, devnetRow } from "./generator.ts";

/** The seed `initModel` is called with for the devnet model. */
export const DEVNET_MODEL_SEED = 0;
/** How many training batches the genesis lists (used as `batches[round mod n]`). */
export const DEVNET_BATCHES = 16;
/** Windows of the devnet batches: short rows so that a step takes seconds in the reference kernels. */
export const DEVNET_WINDOWS: WindowOptions = { context: 48, response: 16, maxWindows: 1 };
/** The first generator row used for training batches (rows before it trained the tokenizer). */
export const DEVNET_FIRST_TRAINING_ROW = DEVNET_TOKENIZER_ROWS;
/** SGD learning rate of the devnet (float64, written as a hex float in genesis). */
export const DEVNET_LEARNING_RATE = 0.5;
/** Global gradient clip of the devnet (float64, written as a hex float in genesis). */
export const DEVNET_CLIP = 1;

/** The devnet's pinned contents and the bytes of every object they name. */
export interface DevnetContents {
  readonly codec: BuiltCodec;
  readonly model: { readonly manifest: Manifest; readonly root: string };
  readonly batches: Batch[];
  readonly learningRate: string;
  readonly clip: string;
  /** root → bytes of every object the contents name (codec backend and manifest, components, model manifest). */
  readonly objects: Map<string, Uint8Array>;
}

/** A codec-bound text batch in the kernels' form: ids as they are, each label moved to the position before. */
export function kernelBatch(batch: TextBatch): Batch {
  return validateBatch({
    input_ids: batch.rows.map((r) => [...r.tokens]),
    labels: batch.rows.map((r) => [...r.labels.slice(1), IGNORE]),
  }, PRESETS.devnet);
}

/** Cuts `count` batches of `MAX_BATCH_ROWS` windows from generator rows starting at `first`, one window a row. */
export function devnetBatches(
  codec: TextCodec,
  count: number = DEVNET_BATCHES,
  first: number = DEVNET_FIRST_TRAINING_ROW,
  options: WindowOptions = DEVNET_WINDOWS,
): TextBatch[] {
  const batches: TextBatch[] = [];
  let row = first;
  while (batches.length < count) {
    const windows = [];
    while (windows.length < MAX_BATCH_ROWS) {
      const doc = buildWindows(codec, devnetRow(DEVNET_SOURCE, row++), options);
      windows.push(...doc.windows.slice(0, MAX_BATCH_ROWS - windows.length));
    }
    batches.push(makeBatch(codec.root, windows, codec.manifest.vocabulary));
  }
  return batches;
}

/** Computes the devnet's contents (about a few seconds: the tokenizer training dominates). */
export function devnetContents(): DevnetContents {
  const { codec } = buildDevnetCodec(DEVNET_SOURCE);
  const objects = new Map<string, Uint8Array>();
  objects.set(sha256Hex(codec.backend), codec.backend);
  objects.set(codec.root, canonicalBytes(codec.manifest));
  const text = TextCodec.fromParts(codec.manifest as unknown as JsonValue, codec.backend, codec.root);
  const model = initModel(PRESETS.devnet, DEVNET_MODEL_SEED);
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) {
    roots[name] = sha256Hex(bytes);
    objects.set(roots[name], bytes);
  }
  const origin: JsonObject = { init: "neuroshard-devnet", preset: "devnet", seed: DEVNET_MODEL_SEED };
  const manifest = buildManifest(model.config, roots, { origin, tokenizer_root: codec.root });
  const root = manifestRoot(manifest);
  objects.set(root, canonicalBytes(manifest));
  return {
    codec,
    model: { manifest, root },
    batches: devnetBatches(text).map(kernelBatch),
    learningRate: toHexFloat(DEVNET_LEARNING_RATE),
    clip: toHexFloat(DEVNET_CLIP),
    objects,
  };
}

/** Writes every object of the contents into `store` (idempotent: the store is content-addressed). */
export async function storeContents(store: ObjectStore, contents: DevnetContents): Promise<void> {
  for (const [root, bytes] of contents.objects) await store.putExpected(root, bytes);
}
