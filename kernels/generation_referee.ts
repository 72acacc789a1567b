/**
 * The referees of a generation record (PROTOCOL §8.1). Stages 0 … S−1 are the prefill's partitions, stage S
 * is the head.
 *
 * - A partition is replayed from its sealed inputs alone (its components and, past partition 0, its input
 *   activation; partition 0 embeds the prefill ids, which the record binds) through the stage referee's
 *   forward path (`stageForward`), and its output root compared: a difference is `forward output`.
 * - The head is replayed from the embedding, the final norm and the sealed final hidden state: the argmax of
 *   the logits at positions P−1 … T−1 is compared with the committed tokens; a difference is
 *   `generated token`.
 *
 * Missing, wrongly hashed or malformed inputs are a mismatch of the phase that needed them; anything that is
 * not a protocol error (out of memory, a crash) is `error` and must never decide a dispute.
 *
 * @example
 * ```ts
 * import { generationNeeded, replayGeneration } from "./generation_referee.ts";
 * // const needed = generationNeeded(manifest, traces, head, stage);
 * // replayGeneration({ manifest, record, traces, head, stage, fetch }).verdict === "match"
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { configFromJson } from "./config.ts";
import { partitionNeeded, replayPartition, sealedComponents } from "./forward_graph.ts";
import {
  type GenerationRecord,
  type HeadTrace,
  type PartitionTrace,
  prefillIds,
} from "./generation_record.ts";
import { headArgmax } from "./generation_record.ts";
import type { Manifest } from "./manifest.ts";
import { fetchChecked, Mismatch, phase, type Verdict } from "./referee.ts";
import { readValue } from "./safetensors.ts";

/** A generation record with its traces, and the bytes sealed for one stage. */
export interface GenerationReplay {
  readonly manifest: Manifest;
  readonly record: GenerationRecord;
  readonly traces: readonly PartitionTrace[];
  readonly head: HeadTrace;
  /** 0 … S−1 a partition, S the head. */
  readonly stage: number;
  readonly fetch: (root: string) => Uint8Array | undefined;
}

/** The sorted roots a fraud challenge of `stage` needs sealed. */
export function generationNeeded(
  manifest: Manifest,
  traces: readonly PartitionTrace[],
  head: HeadTrace,
  stage: number,
): string[] {
  if (stage !== traces.length) return partitionNeeded(manifest, traces, stage);
  return [...new Set([manifest.components.embed!, manifest.components.norm!, head.input])].sort();
}

/** Every object a record commits that an availability challenge may name: each partition's output. */
export function generationObjects(traces: readonly PartitionTrace[]): Set<string> {
  return new Set(traces.map((t) => t.output));
}

/** Replays one stage of a generation record (see the module comment). */
export function replayGeneration(input: GenerationReplay): Verdict {
  try {
    if (input.stage === input.traces.length) replayHead(input);
    else replayGenerationPartition(input);
    return { verdict: "match" };
  } catch (e) {
    if (e instanceof Mismatch) return { verdict: "mismatch", what: e.what, message: e.message };
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

function replayGenerationPartition(input: GenerationReplay): void {
  const { record, stage } = input;
  const trace = input.traces[stage]!;
  const ids = prefillIds(record.prompt_ids, record.tokens);
  if (stage === 0 && trace.input !== id(ids)) {
    throw new Mismatch(
      "forward output",
      "invalid_record: Cannot replay: partition 0 input is not the prefill ids",
    );
  }
  replayPartition(input.manifest, trace, stage, { B: 1, T: ids.length, ids }, input.fetch);
}

function replayHead(input: GenerationReplay): void {
  const { record, head } = input;
  phase("generated token", () => {
    const config = configFromJson(input.manifest.config as unknown as JsonValue);
    const T = record.prompt_ids.length + record.tokens.length - 1;
    const parts = sealedComponents(input.manifest, ["embed", "norm"], input.fetch);
    const hidden = readValue(fetchChecked(input, head.input, "final hidden state"), [
      1,
      T,
      config.hidden_size,
    ]);
    const got = headArgmax({ config, components: parts }, hidden.data, head.first, T);
    const at = got.findIndex((t, i) => t !== head.argmax[i]);
    if (at >= 0 || got.length !== head.argmax.length) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: token ${at} is ${got[at]}, committed ${head.argmax[at]}`,
      );
    }
  });
}
