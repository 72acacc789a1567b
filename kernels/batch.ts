/**
 * A training batch: B rows of T token ids and T labels (the target of each position, −100 for none), as
 * canonical JSON `{input_ids, labels}`. Its root is `id(batch)`.
 *
 * @example
 * ```ts
 * import { batchArrays, validateBatch } from "./batch.ts";
 * import { PRESETS } from "./config.ts";
 * const batch = validateBatch({ input_ids: [[1, 2, 3]], labels: [[2, 3, -100]] }, PRESETS.devnet);
 * batchArrays(batch).T; // 3
 * ```
 */
import { isObject, type JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import type { ModelConfig } from "./config.ts";
import { IGNORE_INDEX } from "./cross_entropy.ts";

/** A batch as committed. */
export interface Batch {
  readonly input_ids: number[][];
  readonly labels: number[][];
}

/** The batch as flat arrays: ids and labels [B·T]. */
export interface BatchArrays {
  readonly B: number;
  readonly T: number;
  readonly ids: Int32Array;
  readonly labels: Int32Array;
}

function bad(message: string): ProtocolError {
  return new ProtocolError("invalid_tensor", `Cannot use batch: ${message}`);
}

/** Checks shape and ranges against the model; `invalid_tensor` otherwise. Returns the batch. */
export function validateBatch(value: JsonValue, c: ModelConfig): Batch {
  if (!isObject(value) || Object.keys(value).sort().join(",") !== "input_ids,labels") {
    throw bad("expected exactly input_ids and labels");
  }
  const { input_ids, labels } = value;
  if (!Array.isArray(input_ids) || !Array.isArray(labels) || input_ids.length < 1) {
    throw bad("input_ids and labels must be non-empty arrays of rows");
  }
  if (labels.length !== input_ids.length) {
    throw bad(`${input_ids.length} id rows but ${labels.length} label rows`);
  }
  const T = Array.isArray(input_ids[0]) ? input_ids[0].length : 0;
  if (T < 1 || T > c.max_position_embeddings) {
    throw bad(`rows have ${T} tokens, expected 1..${c.max_position_embeddings}`);
  }
  let labelled = 0;
  for (let b = 0; b < input_ids.length; b++) {
    const ids = input_ids[b], ls = labels[b];
    if (!Array.isArray(ids) || !Array.isArray(ls) || ids.length !== T || ls.length !== T) {
      throw bad(`row ${b} does not have ${T} ids and ${T} labels`);
    }
    for (let t = 0; t < T; t++) {
      const id = ids[t], l = ls[t];
      if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= c.vocab_size) {
        throw bad(`id ${id} at row ${b} position ${t} is outside [0, ${c.vocab_size})`);
      }
      if (l === IGNORE_INDEX) continue;
      if (!Number.isInteger(l) || (l as number) < 0 || (l as number) >= c.vocab_size) {
        throw bad(`label ${l} at row ${b} position ${t} is neither -100 nor in [0, ${c.vocab_size})`);
      }
      labelled++;
    }
  }
  if (labelled === 0) throw bad("every label is -100");
  return value as unknown as Batch;
}

/** Flattens a validated batch. */
export function batchArrays(batch: Batch): BatchArrays {
  const B = batch.input_ids.length, T = batch.input_ids[0]!.length;
  return { B, T, ids: Int32Array.from(batch.input_ids.flat()), labels: Int32Array.from(batch.labels.flat()) };
}
