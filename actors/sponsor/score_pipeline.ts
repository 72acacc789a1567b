/**
 * Driving one score across workers (PROTOCOL §7.1): open a session per partition over the stacked windows,
 * forward 0 → last, relay the last output to stage 0, `score_head` there, then assemble the score record and
 * its metadata. The sessions are named by the score itself (`assignment = id({evaluation, side, role,
 * offset, attempt})`, `step = offset`), so every operation id is derived from content: running the pipeline
 * again after a crash or a lost reply returns the workers' recorded results and the same record, byte for
 * byte, without recomputation. Activations are relayed by root, a missing component is copied from the pool
 * (`pipeline.ts`).
 *
 * @example
 * ```ts
 * import { runScorePipeline } from "./score_pipeline.ts";
 * // const s = await runScorePipeline({ workers, partitions, manifest, modelRoot, windows, chainId, score });
 * // s.recordRoot, s.metadata
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { PartitionTrace } from "../../kernels/forward_graph.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { assembleScore, type ScoreHead, type ScoreRecord, stackWindows } from "../../kernels/score_record.ts";
import { keyedById } from "../../ledger/training/wire.ts";
import type { WorkerClient } from "../common/worker_client.ts";
import { ensureComponents, op, relay } from "./pipeline.ts";

/** Which score this is: the group, its offset and the attempt at that offset (0 first). */
export interface ScoreTask {
  readonly evaluation_id: string;
  readonly side: "baseline" | "candidate";
  readonly role: "retention" | "fresh";
  readonly offset: number;
  readonly attempt: number;
}

/** What one score needs. */
export interface ScorePipelineInput {
  /** One worker per partition, in order. */
  readonly workers: readonly WorkerClient[];
  readonly pool?: readonly WorkerClient[];
  readonly partitions: readonly (readonly string[])[];
  readonly manifest: Manifest;
  readonly modelRoot: string;
  /** The assigned windows (one-row batches of one length), in order. */
  readonly windows: readonly Batch[];
  readonly chainId: string;
  readonly score: ScoreTask;
}

/** What one score produces. */
export interface ScorePipelineOutput {
  readonly record: ScoreRecord;
  readonly recordRoot: string;
  readonly traces: PartitionTrace[];
  readonly head: ScoreHead;
  readonly metadata: JsonObject;
}

/** Runs the score (see the module comment). */
export async function runScorePipeline(input: ScorePipelineInput): Promise<ScorePipelineOutput> {
  const { workers, partitions, manifest, score } = input;
  const S = partitions.length, pool = input.pool ?? workers;
  const batch = stackWindows(input.windows);
  const assignment = id(score as unknown as JsonValue);
  const sessions: string[] = [];
  for (let i = 0; i < S; i++) {
    await ensureComponents(workers[i]!, pool, partitions[i]!.map((n) => manifest.components[n]!));
    const open = {
      chain_id: input.chainId,
      assignment,
      stage: i,
      step: score.offset,
      partition: [...partitions[i]!],
      parent: manifest as unknown as JsonValue,
      batch: batch as unknown as JsonValue,
      learning_rate: toHexFloat(0), // a score updates nothing
    };
    sessions[i] = id(open);
    await op(workers[i]!, sessions[i]!, score.offset, "open", open);
  }
  const traces: PartitionTrace[] = [];
  let from = id(batch as unknown as JsonValue);
  for (let i = 0; i < S; i++) {
    if (i > 0) await relay(workers[i - 1]!, workers[i]!, from);
    const r = await op(workers[i]!, sessions[i]!, score.offset, "forward", { input: i === 0 ? null : from });
    traces.push({
      phase: "forward",
      partition: [...partitions[i]!],
      input: from,
      output: r.output as string,
    });
    from = r.output as string;
  }
  await relay(workers[S - 1]!, workers[0]!, from);
  const h = await op(workers[0]!, sessions[0]!, score.offset, "score_head", { head_input: from });
  const assembled = assembleScore(input.modelRoot, input.windows, traces, {
    losses: h.losses as string[],
    targets: h.targets as number[],
    argmax: h.argmax as number[][],
  });
  return {
    ...assembled,
    metadata: keyedById([
      assembled.record as unknown as JsonValue,
      ...(assembled.traces as unknown as JsonValue[]),
      assembled.head as unknown as JsonValue,
    ]),
  };
}
