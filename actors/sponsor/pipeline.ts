/**
 * Driving one training step across workers (PROTOCOL §10.3): open a session per stage, forward 0 → last,
 * head on stage 0, backward last → 0, norms → scale (each worker recomputes it from the norms and the clip),
 * update, then the record, the candidate manifest and one receipt per stage. Activations and gradients are
 * relayed between workers by root (`GET /object` from the producer, `PUT /object/put` to the consumer), and a
 * component a worker lacks is copied from a worker that has it.
 *
 * Every call is a re-delivery-safe operation whose id is derived from content, so running the pipeline
 * again after any crash or lost reply returns the workers' recorded results without recomputation and
 * produces the same record, byte for byte.
 *
 * @example
 * ```ts
 * import { runPipeline } from "./pipeline.ts";
 * // const out = await runPipeline({ workers, partitions, parent, batch, learningRate, clip, chainId, assignment, step });
 * // out.recordRoot, out.metadata
 * ```
 */
import { type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { fromHexFloat } from "../../core/hex_float.ts";
import type { Batch } from "../../kernels/batch.ts";
import { type Manifest, manifestRoot } from "../../kernels/manifest.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import { claimMetadata, type Receipt, verifyReceipt } from "../../ledger/training/wire.ts";
import type { WorkerClient } from "../common/worker_client.ts";

/** What one step needs. */
export interface PipelineInput {
  /** One worker per stage, in stage order. */
  readonly workers: readonly WorkerClient[];
  /** Every worker the sponsor knows (to find a missing component); defaults to `workers`. */
  readonly pool?: readonly WorkerClient[];
  readonly partitions: readonly (readonly string[])[];
  readonly parent: Manifest;
  readonly batch: Batch;
  /** Hex floats as in genesis. */
  readonly learningRate: string;
  readonly clip: string;
  readonly chainId: string;
  readonly assignment: string;
  readonly step: number;
  /** Called before each phase (for progress lines). */
  readonly onPhase?: (phase: string) => void;
}

/** What one step produces. */
export interface PipelineOutput {
  readonly record: StepRecord;
  readonly recordRoot: string;
  readonly traces: StageTrace[];
  readonly candidate: Manifest;
  readonly receipts: Receipt[];
  readonly metadata: JsonObject;
  readonly loss: number;
}

/** Delivers one operation of a session to `w`; its value, or the worker's protocol error thrown. */
export async function op(
  w: WorkerClient,
  session: string,
  step: number,
  position: string,
  input: JsonObject,
): Promise<JsonObject> {
  const r = await w.operation(session, step, position, input);
  if (!r.ok) {
    throw new ProtocolError(
      r.code as never,
      `Cannot run ${position} of session ${session} on ${w.url}: ${r.message}`,
    );
  }
  return r.value;
}

/** Copies object `root` from `from` to `to` unless `to` has it. */
export async function relay(from: WorkerClient, to: WorkerClient, root: string): Promise<void> {
  if (from === to || await to.hasObject(root)) return;
  await to.putObject(await from.getObject(root));
}

/** Makes sure `w` holds every component of its partition, copying from the pool. */
export async function ensureComponents(
  w: WorkerClient,
  pool: readonly WorkerClient[],
  roots: readonly string[],
): Promise<void> {
  for (const root of roots) {
    if (await w.hasObject(root)) continue;
    let copied = false;
    for (const other of pool) {
      if (other === w || !(await other.hasObject(root))) continue;
      await w.putObject(await other.getObject(root));
      copied = true;
      break;
    }
    if (!copied) {
      throw new ProtocolError(
        "object_not_found",
        `Cannot open stage on ${w.url}: no worker holds component ${root}`,
      );
    }
  }
}

/** Runs the step (see the module comment). */
export async function runPipeline(input: PipelineInput): Promise<PipelineOutput> {
  const { workers, partitions, parent, batch, step } = input;
  const S = partitions.length;
  if (workers.length !== S) {
    throw new ProtocolError("placement_failed", `Cannot run step: ${workers.length} workers for ${S} stages`);
  }
  const phase = input.onPhase ?? (() => {});
  const pool = input.pool ?? workers;
  const sessions: string[] = [];
  phase("open");
  for (let i = 0; i < S; i++) {
    await ensureComponents(workers[i]!, pool, partitions[i]!.map((n) => parent.components[n]!));
  }
  for (let i = 0; i < S; i++) {
    const open = {
      chain_id: input.chainId,
      assignment: input.assignment,
      stage: i,
      step,
      partition: [...partitions[i]!],
      parent: parent as unknown as JsonValue,
      batch: batch as unknown as JsonValue,
      learning_rate: input.learningRate,
    };
    sessions[i] = id(open);
    await op(workers[i]!, sessions[i]!, step, "open", open);
  }
  phase("forward");
  const outputs: string[] = [];
  for (let i = 0; i < S; i++) {
    if (i > 0) await relay(workers[i - 1]!, workers[i]!, outputs[i - 1]!);
    const r = await op(workers[i]!, sessions[i]!, step, "forward", {
      input: i === 0 ? null : outputs[i - 1]!,
    });
    outputs[i] = r.output as string;
  }
  phase("head");
  await relay(workers[S - 1]!, workers[0]!, outputs[S - 1]!);
  const head = await op(workers[0]!, sessions[0]!, step, "head", { head_input: outputs[S - 1]! });
  phase("backward");
  const norms: string[] = [];
  let g = head.head_gradient as string;
  let from = workers[0]!;
  for (let i = S - 1; i >= 0; i--) {
    await relay(from, workers[i]!, g);
    const r = await op(workers[i]!, sessions[i]!, step, "backward", { gradient_out: g });
    norms[i] = r.norm_squared as string;
    if (i > 0) {
      g = r.gradient_in as string;
      from = workers[i]!;
    }
  }
  phase("update");
  const traces: StageTrace[] = [];
  let scale = "";
  const components: Record<string, string> = {};
  for (let i = 0; i < S; i++) {
    const r = await op(workers[i]!, sessions[i]!, step, "update", { norms, clip: input.clip });
    traces[i] = r.trace as unknown as StageTrace;
    scale = r.scale as string;
    Object.assign(components, r.components);
  }
  const parentRoot = manifestRoot(parent);
  const candidate: Manifest = {
    ...parent,
    components: { ...parent.components, ...components },
    parent: parentRoot,
  };
  const record: StepRecord = {
    parent: parentRoot,
    model_root: manifestRoot(candidate),
    batch: id(batch as unknown as JsonValue),
    step,
    traces: traces.map((t) => id(t as unknown as JsonValue)),
    norms,
    clip: input.clip,
    learning_rate: input.learningRate,
    scale,
    loss: head.loss as string,
  };
  phase("receipts");
  const receipts: Receipt[] = [];
  for (let i = 0; i < S; i++) {
    const r = await op(workers[i]!, sessions[i]!, step, "receipt", {
      record: record as unknown as JsonObject,
    });
    const v = verifyReceipt(r);
    if (!v.ok) throw new ProtocolError(v.code, `Cannot use receipt of stage ${i}: ${v.message}`);
    receipts[i] = v.value;
  }
  return {
    record,
    recordRoot: id(record as unknown as JsonValue),
    traces,
    candidate,
    receipts,
    metadata: claimMetadata(record, traces, candidate, receipts),
    loss: fromHexFloat(head.loss as string),
  };
}
