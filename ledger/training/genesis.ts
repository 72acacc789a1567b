/**
 * The training part of a genesis: the `model` field `{manifest, root}` (the devnet model's manifest; the
 * component bytes live in object stores, not in genesis) and the optional `training` field
 * `{learning_rate, clip, batches}` (hex floats and the batch JSONs used as `training_batches[round mod n]`
 * until data cohorts exist). Both null (or `training` absent) means a chain without training.
 */
import { hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../../core/hex_float.ts";
import { type Batch, validateBatch } from "../../kernels/batch.ts";
import { type Manifest, parseManifest } from "../../kernels/manifest.ts";

/** Most training batches a genesis may list. */
export const MAX_GENESIS_BATCHES = 4_096;

/** The checked training setup of a genesis. */
export interface TrainingSetup {
  /** The genesis model: the first learning and serving root. */
  readonly manifest: Manifest;
  readonly root: string;
  /** Hex floats, as committed in every record. */
  readonly learning_rate: string;
  readonly clip: string;
  readonly batches: readonly Batch[];
}

function bad(message: string): never {
  throw new ProtocolError("invalid_value", `Cannot use genesis: ${message}`);
}

function hexFloat(value: unknown, what: string, min: number, strict: boolean): string {
  let x: number;
  try {
    x = fromHexFloat(value as string);
  } catch {
    return bad(`training.${what} is ${JSON.stringify(value)}, expected a hex float`);
  }
  if (x < min || (strict && x === min) || toHexFloat(x) !== value) {
    bad(`training.${what} is ${value}, expected ${strict ? "above" : "at least"} ${min}`);
  }
  return value as string;
}

/**
 * Checks `model` and `training`; null when there is no training section; `invalid_value` when malformed.
 * With `cohorts` (the genesis has a data section, `ledger/data/genesis.ts`) `batches` must be empty: such a
 * chain trains only on activated cohorts.
 */
export function parseTrainingGenesis(
  model: JsonValue,
  training: JsonValue,
  cohorts = false,
): TrainingSetup | null {
  if (training === null) return null;
  if (!isObject(model) || !hasExactKeys(model, ["manifest", "root"])) {
    bad("a training section needs model {manifest, root}");
  }
  let manifest: Manifest;
  let config;
  try {
    ({ manifest, config } = parseManifest(model.manifest ?? null));
  } catch (e) {
    return bad(`model.manifest: ${(e as Error).message}`);
  }
  if (id(manifest as unknown as JsonValue) !== model.root) {
    bad(
      `model.root is ${JSON.stringify(model.root)}, the manifest's id is ${
        id(manifest as unknown as JsonValue)
      }`,
    );
  }
  if (!isObject(training) || !hasExactKeys(training, ["learning_rate", "clip", "batches"])) {
    bad("training is not {learning_rate, clip, batches}");
  }
  const learningRate = hexFloat(training.learning_rate, "learning_rate", 0, false);
  const clip = hexFloat(training.clip, "clip", 0, true);
  const list = training.batches;
  if (cohorts) {
    if (!Array.isArray(list) || list.length !== 0) {
      bad("a chain with a data section lists no training.batches");
    }
  } else if (!Array.isArray(list) || list.length < 1 || list.length > MAX_GENESIS_BATCHES) {
    bad(`training.batches is not a list of 1-${MAX_GENESIS_BATCHES} batches`);
  }
  const batches = list.map((b, i) => {
    try {
      return validateBatch(b, config);
    } catch (e) {
      return bad(`training.batches[${i}]: ${(e as Error).message}`);
    }
  });
  return { manifest, root: model.root as string, learning_rate: learningRate, clip, batches };
}
