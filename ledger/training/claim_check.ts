/**
 * The checks of a training `claim` that the machine cannot see (PROTOCOL §5): the metadata bound and its
 * content addressing, exactly one signed receipt per stage by the reserved worker of that stage, the graph
 * checks of §10.4 (`checkRecord`, no neural work) against the learning root's manifest, and the work identity.
 */
import { canonicalBytes, isObject, type JsonObject } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { fromHexFloat } from "../../core/hex_float.ts";
import { isRoot } from "../../core/hex.ts";
import { MAX_METADATA_BYTES } from "../../core/limits.ts";
import type { Batch } from "../../kernels/batch.ts";
import { type Manifest, parseManifest } from "../../kernels/manifest.ts";
import { checkRecord, type StageTrace, type StepRecord } from "../../kernels/trace.ts";
import type { Assignment } from "../../workflows/training.ts";
import { verifyReceipt, workIdentity } from "./wire.ts";

/** A claim that passed every check. */
export interface CheckedClaim {
  readonly record: StepRecord;
  readonly traces: StageTrace[];
  readonly candidate: Manifest;
  readonly identity: string;
}

/** What a claim is checked against. */
export interface ClaimContext {
  readonly chainId: string;
  readonly assignment: Assignment;
  readonly round: number;
  readonly parent: Manifest;
  readonly batch: Batch;
  readonly learningRate: string;
  readonly clip: string;
}

/** Checks that `metadata` is at most 512 KiB and every key is the id of its value. */
export function checkKeyedMetadata(metadata: unknown, what: string): Rejection | null {
  if (!isObject(metadata)) return reject("invalid_record", `Cannot ${what}: metadata is not an object`);
  const size = canonicalBytes(metadata).length;
  if (size > MAX_METADATA_BYTES) {
    return reject("too_large", `Cannot ${what}: metadata is ${size} bytes, at most ${MAX_METADATA_BYTES}`);
  }
  for (const [k, v] of Object.entries(metadata)) {
    if (id(v) !== k) {
      return reject("invalid_record", `Cannot ${what}: metadata key ${k} is not the id of its value`);
    }
  }
  return null;
}

/** Runs every claim check; the checked record, traces, candidate and work identity, or the first rejection. */
export function checkClaim(
  metadata: unknown,
  recordRoot: unknown,
  ctx: ClaimContext,
): CheckedClaim | Rejection {
  const bad = (message: string) => reject("invalid_record", `Cannot claim: ${message}`);
  const keyed = checkKeyedMetadata(metadata, "claim");
  if (keyed) return keyed;
  const m = metadata as JsonObject;
  if (!isRoot(recordRoot) || !isObject(m[recordRoot])) {
    return bad(`record ${recordRoot} is not in the metadata`);
  }
  const record = m[recordRoot] as unknown as StepRecord;
  if (!Array.isArray(record.traces) || !record.traces.every(isRoot) || !isRoot(record.model_root)) {
    return bad("the record has no trace ids or model root");
  }
  const S = record.traces.length, workers = ctx.assignment.workers;
  if (S !== workers.length) return bad(`the record has ${S} stages, ${workers.length} workers are reserved`);
  if (new Set(record.traces).size !== S) return bad("two stages have the same trace");
  const traces = record.traces.map((r) => m[r]);
  if (!traces.every(isObject)) return bad("a stage trace is not in the metadata");
  let candidate: Manifest;
  try {
    candidate = parseManifest(m[record.model_root] ?? null).manifest;
  } catch (e) {
    return bad(`the candidate manifest: ${(e as Error).message}`);
  }
  const known = new Set([recordRoot, ...record.traces, record.model_root]);
  const receipts = Object.entries(m).filter(([k]) => !known.has(k)).map(([, v]) => v);
  if (receipts.length !== S) {
    return reject("invalid_receipt", `Cannot claim: ${receipts.length} receipts for ${S} stages`);
  }
  const seen = new Set<number>();
  for (const value of receipts) {
    const r = verifyReceipt(value);
    if (!r.ok) return r;
    const b = r.value.receipt;
    const stage = b.stage;
    const fail = (why: string) =>
      reject("invalid_receipt", `Cannot claim: the receipt of stage ${stage} ${why}`);
    if (stage >= S || seen.has(stage)) return fail(`is out of range or repeated (${S} stages)`);
    seen.add(stage);
    if (b.chain_id !== ctx.chainId) return fail(`names chain ${b.chain_id}`);
    if (b.assignment !== ctx.assignment.id) return fail(`names assignment ${b.assignment}`);
    if (b.record_root !== recordRoot) return fail(`names record ${b.record_root}`);
    if (b.trace_root !== record.traces[stage]) return fail(`names trace ${b.trace_root}`);
    if (r.value.public_key !== workers[stage]) {
      return fail(`is signed by ${r.value.public_key}, the reserved worker is ${workers[stage]}`);
    }
  }
  if (record.batch !== ctx.assignment.batch) {
    return bad(`batch is ${record.batch}, reserved ${ctx.assignment.batch}`);
  }
  if (record.step !== ctx.round) return bad(`step is ${record.step}, the training round is ${ctx.round}`);
  try {
    const v = checkRecord(record, traces as unknown as StageTrace[], ctx.parent, candidate, {
      learning_rate: fromHexFloat(ctx.learningRate),
      clip: fromHexFloat(ctx.clip),
    });
    if (!v.ok) return v;
  } catch (e) {
    return bad(`the record is malformed: ${(e as Error).message}`);
  }
  const identity = workIdentity(ctx.parent, ctx.batch, ctx.learningRate, ctx.clip);
  return { record, traces: traces as unknown as StageTrace[], candidate, identity };
}

/** Every object a claim names as an input or output (what an availability challenge may ask for). */
export function claimObjects(parent: Manifest, traces: readonly StageTrace[]): Set<string> {
  const out = new Set<string>();
  for (const t of traces) {
    for (const r of [t.input, t.output, t.head_input, t.head_gradient, t.gradient_out, t.gradient_in]) {
      if (typeof r === "string") out.add(r);
    }
    for (const name of t.partition) {
      out.add(parent.components[name]!);
      out.add(t.components[name]!);
    }
  }
  return out;
}
