/**
 * The referees of a score record (PROTOCOL §7). Stages 0 … S−1 are its partitions, stage S its head.
 *
 * - A partition is replayed from its sealed components and (past partition 0) its sealed input activation
 *   over the stacked windows, through the stage referee's forward path (`forward_graph.ts`); a different
 *   output is `forward output`.
 * - The head referee needs only the embedding, the final norm and the sealed final hidden state — no
 *   transformer block: it recomputes each window's loss (`window loss`) and then each position's argmax
 *   (`next-token argmax`) and compares them with the committed head.
 *
 * The windows come from the ledger's own copy of the cohort's batches, never from the disputed record.
 * Missing, wrongly hashed or malformed inputs are a mismatch of the phase that needed them; anything that is
 * not a protocol error (out of memory, a crash) is `error` and must never decide a dispute.
 *
 * @example
 * ```ts
 * import { replayScore, scoreNeeded } from "./score_referee.ts";
 * // const needed = scoreNeeded(manifest, traces, head, stage);
 * // replayScore({ manifest, record, traces, head, windows, stage, fetch }).verdict === "match"
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { toHexFloat } from "../core/hex_float.ts";
import type { Batch } from "./batch.ts";
import { configFromJson } from "./config.ts";
import { partitionNeeded, type PartitionTrace, replayPartition, sealedComponents } from "./forward_graph.ts";
import type { Manifest } from "./manifest.ts";
import { fetchChecked, Mismatch, phase, type Verdict } from "./referee.ts";
import { readValue } from "./safetensors.ts";
import { type ScoreHead, scoreHeadValues, type ScoreRecord, stackWindows } from "./score_record.ts";

/** A score record with its traces, its windows, and the bytes sealed for one stage. */
export interface ScoreReplay {
  readonly manifest: Manifest;
  readonly record: ScoreRecord;
  readonly traces: readonly PartitionTrace[];
  readonly head: ScoreHead;
  /** The assigned windows, from the verifier's own copy. */
  readonly windows: readonly Batch[];
  /** 0 … S−1 a partition, S the head. */
  readonly stage: number;
  readonly fetch: (root: string) => Uint8Array | undefined;
}

/** The sorted roots a fraud challenge of `stage` needs sealed: the head's are embed, norm and hidden state. */
export function scoreNeeded(
  manifest: Manifest,
  traces: readonly PartitionTrace[],
  head: ScoreHead,
  stage: number,
): string[] {
  if (stage !== traces.length) return partitionNeeded(manifest, traces, stage);
  return [...new Set([manifest.components.embed!, manifest.components.norm!, head.input])].sort();
}

/** Replays one stage of a score record (see the module comment). */
export function replayScore(input: ScoreReplay): Verdict {
  try {
    const batch = stackWindows(input.windows);
    if (input.stage === input.traces.length) replayHead(input, batch);
    else {
      const trace = input.traces[input.stage]!;
      if (input.stage === 0 && trace.input !== id(batch as unknown as JsonValue)) {
        throw new Mismatch(
          "forward output",
          "invalid_record: Cannot replay: partition 0 input is not the windows",
        );
      }
      const B = batch.input_ids.length, T = batch.input_ids[0]!.length;
      replayPartition(input.manifest, trace, input.stage, { B, T, ids: batch.input_ids.flat() }, input.fetch);
    }
    return { verdict: "match" };
  } catch (e) {
    if (e instanceof Mismatch) return { verdict: "mismatch", what: e.what, message: e.message };
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

function replayHead(input: ScoreReplay, batch: Batch): void {
  const { head } = input;
  const config = configFromJson(input.manifest.config as unknown as JsonValue);
  const B = batch.input_ids.length, T = batch.input_ids[0]!.length;
  const got = phase("window loss", () => {
    const parts = sealedComponents(input.manifest, ["embed", "norm"], input.fetch);
    const hidden = readValue(fetchChecked(input, head.input, "final hidden state"), [
      B,
      T,
      config.hidden_size,
    ]);
    const values = scoreHeadValues(config, { embed: parts.embed!, norm: parts.norm! }, hidden.data, batch);
    const losses = values.losses.map(toHexFloat);
    const at = losses.findIndex((l, i) => l !== head.losses[i]);
    if (at >= 0) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: window ${at} loss is ${losses[at]}, committed ${head.losses[at]}`,
      );
    }
    return values;
  });
  phase("next-token argmax", () => {
    for (let b = 0; b < B; b++) {
      const t = got.argmax[b]!.findIndex((x, i) => x !== head.argmax[b]?.[i]);
      if (t >= 0) {
        throw new ProtocolError(
          "invalid_record",
          `Cannot replay: window ${b} position ${t} argmax is ${got.argmax[b]![t]}, committed ${
            head.argmax[b]?.[t]
          }`,
        );
      }
    }
  });
}
