/**
 * Synthetic training steps for ledger tests: the devnet model run stage by stage through `openStage` (what
 * Workers run), with an optional forger that commits a wrong forward output, head loss, head gradient, input
 * gradient, squared gradient norm or optimizer update at one stage while keeping every graph link consistent, so only a referee replay can catch it.
 */
import { canonicalBytes, type JsonObject, type JsonValue } from "../../../core/canonical.ts";
import { id, sha256Hex } from "../../../core/digest.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { configFromJson } from "../../../kernels/config.ts";
import type { Manifest } from "../../../kernels/manifest.ts";
import { clipScale } from "../../../kernels/stage.ts";
import { openStage } from "../../../kernels/stage_io.ts";
import type { StageTrace, StepRecord } from "../../../kernels/trace.ts";
import type { AccountKey } from "../../../ledger/keys.ts";
import { claimMetadata, receiptBody, signReceipt } from "../../../ledger/training/wire.ts";

/** What a forger changes, and at which stage. */
export type Forge = {
  what: "forward" | "loss" | "head" | "backward" | "norm" | "optimizer";
  stage: number;
} | null;

/** A computed step: everything a claim needs and every object by root. */
export interface SyntheticStep {
  readonly record: StepRecord;
  readonly recordRoot: string;
  readonly traces: StageTrace[];
  readonly candidate: Manifest;
  readonly candidateRoot: string;
  readonly objects: Map<string, Uint8Array>;
}

/** Flips the lowest bit of the last float32 of a file (a tiny, well-formed numerical lie). */
export function tamper(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  out[out.length - 4]! ^= 1;
  return out;
}

/** Runs one step of `manifest` on `batch` over `partitions`, reading components from `objects`. */
export function computeStep(
  manifest: Manifest,
  objects: ReadonlyMap<string, Uint8Array>,
  batch: Batch,
  partitions: string[][],
  lr: number,
  clip: number,
  step: number,
  forge: Forge = null,
): SyntheticStep {
  const config = configFromJson(manifest.config as JsonValue);
  const out = new Map<string, Uint8Array>();
  const put = (b: Uint8Array) => {
    const r = sha256Hex(b);
    out.set(r, b);
    return r;
  };
  const S = partitions.length;
  const stages = partitions.map((p) =>
    openStage({
      config,
      partition: p,
      components: Object.fromEntries(p.map((n) => [n, objects.get(manifest.components[n]!)!])),
      batch,
    })
  );
  const is = (what: string, i: number) => forge?.what === what && forge.stage === i;
  const outputs: Uint8Array[] = [];
  for (let i = 0; i < S; i++) {
    const o = stages[i]!.forward(i === 0 ? null : outputs[i - 1]!);
    outputs[i] = is("forward", i) ? tamper(o) : o;
  }
  const head = stages[0]!.head(outputs[S - 1]!);
  const headGradientBytes = is("head", 0) ? tamper(head.headGradient) : head.headGradient;
  const gradOut: Uint8Array[] = [], gradIn: (Uint8Array | null)[] = [], norms: number[] = [];
  let g = headGradientBytes;
  for (let i = S - 1; i >= 0; i--) {
    gradOut[i] = g;
    const r = stages[i]!.backward(g);
    gradIn[i] = r.gradientIn && is("backward", i) ? tamper(r.gradientIn) : r.gradientIn;
    // A forged norm is a different float64 (its value times 1 + 2^-40), so the clip scale follows it.
    norms[i] = is("norm", i) ? r.normSquared * (1 + 2 ** -40) : r.normSquared;
    if (i > 0) g = gradIn[i]!;
  }
  const scale = clipScale(norms, clip);
  const comps: Record<string, string>[] = [];
  for (let i = 0; i < S; i++) {
    const files = stages[i]!.update(lr, scale);
    comps[i] = {};
    partitions[i]!.forEach((n, k) => {
      const f = is("optimizer", i) && k === partitions[i]!.length - 1 ? tamper(files[n]!) : files[n]!;
      comps[i]![n] = put(f);
    });
  }
  const parentRoot = id(manifest as unknown as JsonValue);
  const candidate: Manifest = {
    ...manifest,
    components: { ...manifest.components, ...Object.assign({}, ...comps) },
    parent: parentRoot,
  };
  const candidateRoot = put(canonicalBytes(candidate));
  const batchRoot = put(canonicalBytes(batch));
  const roots = outputs.map(put);
  const headGradient = put(headGradientBytes);
  const lrh = toHexFloat(lr), sch = toHexFloat(scale);
  const loss = toHexFloat(is("loss", 0) ? head.loss * (1 + 2 ** -40) : head.loss);
  const traces: StageTrace[] = partitions.map((p, i) => ({
    parent: parentRoot,
    partition: [...p],
    step,
    phase: "train" as const,
    input: i === 0 ? batchRoot : roots[i - 1]!,
    output: roots[i]!,
    ...(i === 0 ? { head_input: roots[S - 1]!, head_gradient: headGradient, loss } : {}),
    gradient_out: put(gradOut[i]!),
    gradient_in: gradIn[i] ? put(gradIn[i]!) : null,
    norm_squared: toHexFloat(norms[i]!),
    learning_rate: lrh,
    scale: sch,
    components: comps[i]!,
  }));
  const record: StepRecord = {
    parent: parentRoot,
    model_root: candidateRoot,
    batch: batchRoot,
    step,
    traces: traces.map((t) => put(canonicalBytes(t))),
    norms: norms.map(toHexFloat),
    clip: toHexFloat(clip),
    learning_rate: lrh,
    scale: sch,
    loss,
  };
  const recordRoot = put(canonicalBytes(record));
  return { record, recordRoot, traces, candidate, candidateRoot, objects: out };
}

/** The metadata of a claim of `s` for `assignment`, with receipts signed by `workers` (stage order). */
export function metadataFor(
  s: SyntheticStep,
  chainId: string,
  assignment: string,
  workers: readonly AccountKey[],
): JsonObject {
  const receipts = s.traces.map((_, i) =>
    signReceipt(receiptBody(chainId, assignment, s.recordRoot, i, s.record.traces[i]!), workers[i]!)
  );
  return claimMetadata(s.record, s.traces, s.candidate, receipts);
}
