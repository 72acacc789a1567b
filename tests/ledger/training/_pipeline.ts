/**
 * Synthetic training steps for ledger tests: the devnet model run stage by stage through `openStage` (what
 * Workers run), with an optional forger that commits a wrong forward output, head loss, head gradient, input
 * gradient, squared gradient norm or optimizer update at one block of one stage while keeping every graph link
 * consistent, so only a replay of that block can catch it. Every block-boundary file is kept with the other
 * objects (what a challenger uploads).
 */
import { canonicalBytes, type JsonObject, type JsonValue } from "../../../core/canonical.ts";
import { id, sha256Hex } from "../../../core/digest.ts";
import { fromHexFloat, toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { configFromJson } from "../../../kernels/config.ts";
import type { Manifest } from "../../../kernels/manifest.ts";
import { clipScale } from "../../../kernels/stage.ts";
import { type OpenStage, openStage } from "../../../kernels/stage_io.ts";
import { blocksOf, boundaryFields, stageBoundaries } from "../../../kernels/boundary.ts";
import { nudgeHexFloat } from "../../../actors/worker/forge.ts";
import type { StageTrace, StepRecord } from "../../../kernels/trace.ts";
import { chunkRootsFor } from "../../../kernels/trace_chunks.ts";
import { chunkRoot } from "../../../core/chunk_tree.ts";
import type { AccountKey } from "../../../ledger/keys.ts";
import { claimMetadata, receiptBody, signReceipt } from "../../../ledger/training/wire.ts";

/**
 * What a forger changes, at which stage and (optionally) which block: a block's index in the stage or
 * `"head"` (stage 0's embedding output, head running sum or embed update). Without `block`: the stage's
 * last block output (forward), its first block's input gradient (backward, stage 0: the head running sum)
 * or its last component (optimizer). `loss` and `head` forge stage 0's loss and head gradient; `norm` the
 * stage's squared norm (committed as its last running sum too).
 */
export type Forge = {
  what: "forward" | "loss" | "head" | "backward" | "norm" | "optimizer";
  stage: number;
  block?: number | "head";
} | {
  /** A wrong chunk root committed for `object` in every trace that names it (the numbers stay honest). */
  what: "chunks";
  object: (traces: readonly StageTrace[]) => string;
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
  const is = (what: string, i: number) =>
    forge !== null && forge.what === what && "stage" in forge && forge.stage === i;
  // The block a forgery targets, by component name (`embed` for stage 0's head).
  const target = (i: number): string | null => {
    if (forge === null || forge.what === "chunks" || forge.stage !== i) return null;
    const blocks = blocksOf(partitions[i]!);
    if (forge.block === "head") return "embed";
    if (forge.block !== undefined) return blocks[forge.block]!;
    if (forge.what === "forward") return blocks.at(-1) ?? "embed";
    if (forge.what === "backward") return i === 0 ? "embed" : blocks[0]!;
    return partitions[i]!.at(-1)!;
  };
  const flip = (a: Float32Array) => {
    new Uint32Array(a.buffer, a.byteOffset, 1)[0]! ^= 1;
  };
  const stages = partitions.map((p, i) =>
    openStage({
      config,
      partition: p,
      components: Object.fromEntries(p.map((n) => [n, objects.get(manifest.components[n]!)!])),
      batch,
      boundaries: {
        keep: (_root, bytes) => put(bytes),
        forge: {
          output: (name, y) => is("forward", i) && target(i) === name ? flip(y) : undefined,
          gradient: (name, dx) => is("backward", i) && target(i) === name ? flip(dx) : undefined,
        },
      },
    })
  );
  const outputs: Uint8Array[] = [];
  for (let i = 0; i < S; i++) outputs[i] = stages[i]!.forward(i === 0 ? null : outputs[i - 1]!);
  const head = stages[0]!.head(outputs[S - 1]!);
  const headGradientBytes = is("head", 0) ? tamper(head.headGradient) : head.headGradient;
  const gradOut: Uint8Array[] = [], gradIn: (Uint8Array | null)[] = [], norms: number[] = [];
  const backs: ReturnType<OpenStage["backward"]>["boundaries"][] = [];
  let g = headGradientBytes;
  for (let i = S - 1; i >= 0; i--) {
    gradOut[i] = g;
    const r = stages[i]!.backward(g);
    gradIn[i] = r.gradientIn;
    backs[i] = r.boundaries;
    // A forged norm is a different float64 (its value times 1 + 2^-40), so the clip scale follows it; it is
    // committed as the stage's last running sum too.
    norms[i] = is("norm", i) ? r.normSquared * (1 + 2 ** -40) : r.normSquared;
    if (is("norm", i)) {
      const last = r.boundaries.blocks.at(-1);
      if (last) last.norm_squared = toHexFloat(norms[i]!);
      else r.boundaries.head = toHexFloat(norms[i]!);
    }
    if (i > 0) g = gradIn[i]!;
  }
  // Stage 0's head has no gradient to send: its forged backward is its running sum, nudged.
  if (is("backward", 0) && target(0) === "embed") {
    backs[0]!.head = nudgeHexFloat(backs[0]!.head!);
    // Without blocks the head sum is the stage's norm, so the forger commits the nudged one there too.
    if (backs[0]!.blocks.length === 0) norms[0] = fromHexFloat(backs[0]!.head);
  }
  const scale = clipScale(norms, clip);
  const comps: Record<string, string>[] = [];
  for (let i = 0; i < S; i++) {
    const files = stages[i]!.update(lr, scale);
    comps[i] = {};
    partitions[i]!.forEach((n) => {
      const f = is("optimizer", i) && target(i) === n ? tamper(files[n]!) : files[n]!;
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
    ...boundaryFields(stageBoundaries(p, stages[i]!.forwardBoundaries(), backs[i]!, comps[i]!)),
  })).map((t, i) => ({
    ...t,
    chunk_roots: chunkRootsFor(manifest, t, i, (r) => chunkRoot(out.get(r) ?? objects.get(r)!)),
  }));
  if (forge?.what === "chunks") {
    const bad = forge.object(traces), wrong = chunkRoot(new Uint8Array(0));
    traces.forEach((t, i) => {
      if (bad in t.chunk_roots) traces[i] = { ...t, chunk_roots: { ...t.chunk_roots, [bad]: wrong } };
    });
  }
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
