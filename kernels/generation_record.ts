/**
 * The generation record of a paid answer (PROTOCOL §8.1): one prefill over `prompt ++ tokens[0..n-2]` commits
 * the forward graph by partition and a head record (final hidden state → per-position argmax). Greedy decoding
 * is deterministic and the model causal, so the argmax at position `P−1+s` of that prefill is exactly the
 * token step `s` of a step-by-step generation chose (`generate` equals `generateByRecompute` bit for bit, and
 * the prefill row's logits at a position equal the recompute's logits of the prefix ending there).
 *
 * - A partition trace is `{phase: "forward", partition, input, output}`: `input` is `id(ids)` on partition 0
 *   (the token ids fed) and the previous partition's output otherwise; `output` is the root of the activation
 *   `[1, T, C]` as a single-tensor file.
 * - The head trace is `{phase: "head", input, first, argmax}`: `input` is the last partition's output, `first`
 *   = P − 1 and `argmax` the argmax of the logits at positions `first … T−1` (the claimed tokens).
 * - The record is `{format, model_root, prompt_ids, tokens, stop, max_tokens, eos_id, input, traces, head}`
 *   with `stop` `"eos"` (the last token is `eos_id`) or `"limit"` (n = `max_tokens`), `traces` the ids of the
 *   partition traces and `head` the id of the head trace.
 *
 * @example
 * ```ts
 * import { generationRecord } from "./generation_record.ts";
 * // const g = generationRecord(model, modelRoot, [1, 2, 3], tokens, { max_tokens: 4, eos_id: 2 }, partitions);
 * // g.recordRoot === id(g.record); g.objects holds every activation by root
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { argmax } from "./cross_entropy.ts";
import { forwardPartitions, forwardShape, type PartitionTrace } from "./forward_graph.ts";
import { headLogits } from "./head.ts";
import type { Model } from "./model.ts";

/** The format tag of a generation record. */
export const GENERATION_FORMAT = "neuroshard-generation-v1";

export type { PartitionTrace } from "./forward_graph.ts";

/** The head trace: final hidden state → the argmax of every generated position. */
export interface HeadTrace {
  readonly phase: "head";
  readonly input: string;
  readonly first: number;
  readonly argmax: number[];
}

/** The committed record of one greedy generation. */
export interface GenerationRecord {
  readonly format: typeof GENERATION_FORMAT;
  readonly model_root: string;
  readonly prompt_ids: number[];
  readonly tokens: number[];
  readonly stop: "eos" | "limit";
  readonly max_tokens: number;
  readonly eos_id: number | null;
  readonly input: string;
  readonly traces: string[];
  readonly head: string;
}

/** The request a record answers: its limit and the codec's EOS id (null when the chain pins no codec). */
export interface GenerationRule {
  readonly max_tokens: number;
  readonly eos_id: number | null;
}

/** A record with everything needed to publish and check it. */
export interface GenerationProof {
  readonly record: GenerationRecord;
  readonly recordRoot: string;
  readonly traces: PartitionTrace[];
  readonly head: HeadTrace;
  /** Every activation the record commits, by root. */
  readonly objects: Map<string, Uint8Array>;
  /** What the head really computes at each generated position (equal to `tokens` for an honest record). */
  readonly computed: number[];
}

/** The ids the prefill feeds: the prompt, then every generated token but the last. */
export function prefillIds(prompt: readonly number[], tokens: readonly number[]): number[] {
  return [...prompt, ...tokens.slice(0, -1)];
}

/** The stop reason of `tokens` under `rule`: `"eos"` when the last is the EOS id, else `"limit"`. */
export function stopOf(tokens: readonly number[], rule: GenerationRule): "eos" | "limit" {
  return rule.eos_id !== null && tokens[tokens.length - 1] === rule.eos_id ? "eos" : "limit";
}

/**
 * Builds the record of `tokens` as the answer to `prompt`: runs the prefill partition by partition (honestly:
 * a forged `tokens` is fed as it is) and commits `tokens` as the head's argmax.
 * `partitions` cover the model in order, partition 0 owning `embed` and `norm`.
 */
export function generationRecord(
  model: Model,
  modelRoot: string,
  prompt: readonly number[],
  tokens: readonly number[],
  rule: GenerationRule,
  partitions: readonly (readonly string[])[],
): GenerationProof {
  const c = model.config, P = prompt.length, n = tokens.length;
  const ids = prefillIds(prompt, tokens);
  const T = ids.length;
  if (n < 1 || T > c.max_position_embeddings) {
    throw new ProtocolError(
      "invalid_inference",
      `Cannot record generation: ${n} tokens after ${P} prompt ids, at most ${c.max_position_embeddings} positions`,
    );
  }
  const graph = forwardPartitions(model, forwardShape(c, 1, T, ids), partitions, id(ids));
  const { traces, objects } = graph;
  const input = traces[traces.length - 1]!.output;
  const computed = headArgmax(model, graph.hidden, P - 1, T);
  const head: HeadTrace = { phase: "head", input, first: P - 1, argmax: [...tokens] };
  const record: GenerationRecord = {
    format: GENERATION_FORMAT,
    model_root: modelRoot,
    prompt_ids: [...prompt],
    tokens: [...tokens],
    stop: stopOf(tokens, rule),
    max_tokens: rule.max_tokens,
    eos_id: rule.eos_id,
    input: id(ids),
    traces: traces.map((t) => id(t as unknown as JsonValue)),
    head: id(head as unknown as JsonValue),
  };
  return {
    record,
    recordRoot: id(record as unknown as JsonValue),
    traces,
    head,
    objects,
    computed,
  };
}

/** The argmax of the logits at positions `first … T−1` of the final hidden state `hidden` [T, C]. */
export function headArgmax(model: Model, hidden: Float32Array, first: number, T: number): number[] {
  const c = model.config, C = c.hidden_size;
  const rows = hidden.subarray(first * C, T * C); // rows: [T−first, C]
  const logits = headLogits(rows, model.components.norm!, model.components.embed!, c, T - first);
  return Array.from(argmax(logits, T - first, c.vocab_size));
}
