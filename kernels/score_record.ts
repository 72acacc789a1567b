/**
 * The forward record of a score claim (PROTOCOL §7): one forward pass over ≤ 4 evaluation windows (one-row
 * batches of one group, so they share a length T) stacked as a batch `[B, T]`, committed by partition exactly
 * like a generation record (`forward_graph.ts`), and a head record that binds the final hidden state to each
 * window's response loss and next-token argmax.
 *
 * - A window's loss is the training step's loss on that window alone: the float64 mean of its labelled
 *   positions' float32 row losses (`crossEntropyForward`), so it is weighted by the window's real targets;
 *   committed as a canonical hex float64, with the target count beside it.
 * - `argmax[b][t]` is the argmax of the logits at position t of window b (the model's next-token choice).
 * - The record is `{format, model_root, windows, input, traces, head}`: `windows` the batch roots in order,
 *   `input = id(stacked batch)` (partition 0's input), `traces` the partition trace ids, `head` the id of
 *   `{phase: "head", input, losses, targets, argmax}` whose `input` is the last partition's output.
 *
 * @example
 * ```ts
 * import { scoreRecord } from "./score_record.ts";
 * // const s = scoreRecord(model, modelRoot, [w0, w1, w2, w3], partitions);
 * // s.head.losses[0] === toHexFloat(trainStep({ ...oneRow(w0) }).loss)
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { toHexFloat } from "../core/hex_float.ts";
import type { Batch } from "./batch.ts";
import type { ModelConfig } from "./config.ts";
import { argmax, crossEntropyForward, IGNORE_INDEX } from "./cross_entropy.ts";
import { forwardPartitions, forwardShape, type PartitionTrace } from "./forward_graph.ts";
import { headLogits } from "./head.ts";
import type { Model } from "./model.ts";
import type { Tensors } from "./safetensors.ts";

/** The format tag of a score record. */
export const SCORE_FORMAT = "neuroshard-score-v1";

/** Most windows one score record covers. */
export const MAX_SCORE_WINDOWS = 4;

/** The head trace of a score: final hidden state → each window's loss, target count and argmax. */
export interface ScoreHead {
  readonly phase: "head";
  readonly input: string;
  readonly losses: string[];
  readonly targets: number[];
  readonly argmax: number[][];
}

/** The committed record of one score. */
export interface ScoreRecord {
  readonly format: typeof SCORE_FORMAT;
  readonly model_root: string;
  readonly windows: string[];
  readonly input: string;
  readonly traces: string[];
  readonly head: string;
}

/** What the head computes from a final hidden state. */
export interface ScoreHeadValues {
  readonly losses: number[];
  readonly targets: number[];
  readonly argmax: number[][];
}

/** A record with everything needed to publish and check it. */
export interface ScoreProof {
  readonly record: ScoreRecord;
  readonly recordRoot: string;
  readonly traces: PartitionTrace[];
  readonly head: ScoreHead;
  /** Every activation the record commits, by root. */
  readonly objects: Map<string, Uint8Array>;
  /** What the head really computes (equal to the committed head for an honest record). */
  readonly computed: ScoreHeadValues;
}

/** The windows stacked into one batch `[B, T]`; `invalid_record` unless 1–4 one-row windows of one length. */
export function stackWindows(windows: readonly Batch[]): Batch {
  const T = windows[0]?.input_ids[0]?.length ?? 0;
  if (
    windows.length < 1 || windows.length > MAX_SCORE_WINDOWS ||
    !windows.every((w) => w.input_ids.length === 1 && w.labels.length === 1 && w.input_ids[0]!.length === T)
  ) {
    throw new ProtocolError(
      "invalid_record",
      `Cannot stack windows: ${windows.length} windows, expected 1-${MAX_SCORE_WINDOWS} one-row batches of one length`,
    );
  }
  return {
    input_ids: windows.map((w) => [...w.input_ids[0]!]),
    labels: windows.map((w) => [...w.labels[0]!]),
  };
}

/** The scored targets of a one-row window: its labels that are not −100. */
export function windowTargets(window: Batch): number {
  return window.labels[0]!.filter((l) => l !== IGNORE_INDEX).length;
}

/** The head over `hidden` `[B·T, C]`: each window's loss, target count and argmax, window by window. */
export function scoreHeadValues(
  config: ModelConfig,
  parts: { readonly embed: Tensors; readonly norm: Tensors },
  hidden: Float32Array,
  batch: Batch,
): ScoreHeadValues {
  const B = batch.input_ids.length, T = batch.input_ids[0]!.length, C = config.hidden_size;
  const V = config.vocab_size;
  const out: ScoreHeadValues = { losses: [], targets: [], argmax: [] };
  for (let b = 0; b < B; b++) {
    const rows = hidden.subarray(b * T * C, (b + 1) * T * C); // rows: [T, C]
    const logits = headLogits(rows, parts.norm, parts.embed, config, T); // logits: [T, V]
    const ce = crossEntropyForward(logits, Int32Array.from(batch.labels[b]!), T, V);
    out.losses.push(ce.loss);
    out.targets.push(ce.labelled);
    out.argmax.push(Array.from(argmax(logits, T, V)));
  }
  return out;
}

/**
 * Builds the score record of `windows` (batches of one row, in the group's order) under `model`: runs the
 * forward graph partition by partition and commits the head. `claimed` replaces the committed losses (a
 * forger's lower losses); the activations stay honest.
 */
export function scoreRecord(
  model: Model,
  modelRoot: string,
  windows: readonly Batch[],
  partitions: readonly (readonly string[])[],
  claimed: { losses?: readonly number[] } = {},
): ScoreProof {
  const batch = stackWindows(windows);
  const B = batch.input_ids.length, T = batch.input_ids[0]!.length;
  const shape = forwardShape(model.config, B, T, batch.input_ids.flat());
  const graph = forwardPartitions(model, shape, partitions, id(batch as unknown as JsonValue));
  const parts = { embed: model.components.embed!, norm: model.components.norm! };
  const computed = scoreHeadValues(model.config, parts, graph.hidden, batch);
  const honest = assembleScore(modelRoot, windows, graph.traces, {
    losses: computed.losses.map(toHexFloat),
    targets: computed.targets,
    argmax: computed.argmax,
  });
  const proof = { ...honest, objects: graph.objects, computed };
  return claimed.losses ? claimLosses(proof, claimed.losses) : proof;
}

/** The same record with other committed losses (what a forger reports); the activations are unchanged. */
export function claimLosses(proof: ScoreProof, losses: readonly number[]): ScoreProof {
  const windows = proof.record.windows;
  if (losses.length !== windows.length) {
    throw new RangeError(`Cannot claim ${losses.length} losses for ${windows.length} windows`);
  }
  const head: ScoreHead = { ...proof.head, losses: losses.map(toHexFloat) };
  const record: ScoreRecord = { ...proof.record, head: id(head as unknown as JsonValue) };
  return { ...proof, head, record, recordRoot: id(record as unknown as JsonValue) };
}

/**
 * The record of a forward graph over `windows` whose partitions committed `traces` and whose head reported
 * `values` (losses as hex floats): what a sponsor assembles from its workers' answers.
 */
export function assembleScore(
  modelRoot: string,
  windows: readonly Batch[],
  traces: readonly PartitionTrace[],
  values: {
    readonly losses: readonly string[];
    readonly targets: readonly number[];
    readonly argmax: readonly (readonly number[])[];
  },
): Omit<ScoreProof, "objects" | "computed"> {
  const batch = stackWindows(windows);
  const head: ScoreHead = {
    phase: "head",
    input: traces[traces.length - 1]!.output,
    losses: [...values.losses],
    targets: [...values.targets],
    argmax: values.argmax.map((row) => [...row]),
  };
  const record: ScoreRecord = {
    format: SCORE_FORMAT,
    model_root: modelRoot,
    windows: windows.map((w) => id(w as unknown as JsonValue)),
    input: id(batch as unknown as JsonValue),
    traces: traces.map((t) => id(t as unknown as JsonValue)),
    head: id(head as unknown as JsonValue),
  };
  return { record, recordRoot: id(record as unknown as JsonValue), traces: [...traces], head };
}
