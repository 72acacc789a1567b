/**
 * One training step over a pipeline of stages (PROTOCOL §10.3), producing every committed object: the
 * activations and gradients between stages (single-tensor safetensors named `value`, shape [B, T, C]), the
 * updated components, one trace per stage, the record and the candidate manifest. Each stage's numbers come
 * from the pure functions of `stage.ts`, so a referee can recompute any one stage alone (`replayStage`).
 *
 * @example
 * ```ts
 * import { trainStep } from "./step.ts";
 * // const out = trainStep({ model, manifest, batch, partitions, learningRate: 0.01, clip: 1, step: 0 });
 * // out.record.loss, out.candidateRoot, out.objects (root → bytes)
 * ```
 */
import { canonicalBytes, type JsonValue } from "../core/canonical.ts";
import { chunkRoot, chunkRootOfParts } from "../core/chunk_tree.ts";
import { id, sha256Hex, sha256Stream } from "../core/digest.ts";
import { toHexFloat } from "../core/hex_float.ts";
import { type Batch, batchArrays, validateBatch } from "./batch.ts";
import { boundaryFields, BoundaryRoots, stageBoundaries } from "./boundary.ts";
import { headDim } from "./config.ts";
import { headForwardBackward, type HeadResult } from "./head.ts";
import type { Manifest } from "./manifest.ts";
import type { Model } from "./model.ts";
import { rotaryTables } from "./rotary.ts";
import { GradientFiles } from "./gradient_files.ts";
import { safetensorsParts, type Tensors, writeSafetensors, writeValue } from "./safetensors.ts";
import {
  applyUpdate,
  applyUpdateInPlace,
  clipScale,
  stageBackward,
  type StageForward,
  stageForward,
} from "./stage.ts";
import type { StageTrace, StepRecord } from "./trace.ts";
import { chunkRootsFor } from "./trace_chunks.ts";

/** What a step needs. */
export interface StepInput {
  readonly model: Model;
  readonly manifest: Manifest; // the parent manifest (its root is the parent)
  readonly batch: Batch;
  readonly partitions: readonly (readonly string[])[]; // from `place`
  readonly learningRate: number;
  readonly clip: number;
  readonly step: number;
}

/** Everything a step produces. */
export interface StepOutput {
  readonly loss: number;
  readonly norms: number[];
  readonly scale: number;
  readonly traces: StageTrace[];
  readonly record: StepRecord;
  readonly recordRoot: string;
  readonly candidate: Model;
  readonly candidateManifest: Manifest;
  readonly candidateRoot: string;
  readonly objects: Map<string, Uint8Array>; // root → bytes of every committed object
}

/** Runs the step stage by stage, forward 0 → last, head on 0, backward last → 0, then the update. */
export function trainStep(input: StepInput): StepOutput {
  const { model, manifest, partitions } = input;
  const c = model.config;
  const batch = validateBatch(input.batch as unknown as JsonValue, c);
  const { B, T, ids, labels } = batchArrays(batch);
  const shape = { config: c, B, T, ids, tables: rotaryTables(T, headDim(c), c.rope_theta) };
  const act = [B, T, c.hidden_size];
  const objects = new Map<string, Uint8Array>();
  const put = (bytes: Uint8Array): string => {
    const root = sha256Hex(bytes);
    objects.set(root, bytes);
    return root;
  };
  // The chunk roots of the parent's component files (the step holds their tensors, not their files), hashed
  // from the tensors where they are (`safetensorsParts`), so no file is built. Only tensors whose file bytes
  // hash to the manifest's root count; a component with a bad shape is left for the forward pass to refuse,
  // and one with a non-finite value (whose bytes no manifest root names) for the update, as before.
  const parentChunks = new Map<string, string>();
  for (const [name, r] of Object.entries(manifest.components)) {
    const tensors = model.components[name];
    let parts: Uint8Array[] | undefined;
    try {
      parts = tensors === undefined ? undefined : safetensorsParts(tensors);
    } catch {
      parts = undefined;
    }
    if (parts === undefined) continue;
    const hash = sha256Stream();
    for (const p of parts) hash.update(p);
    if (hash.hex() === r) parentChunks.set(r, chunkRootOfParts(parts));
  }
  const parentRoot = id(manifest as unknown as JsonValue);
  const batchRoot = put(canonicalBytes(batch));
  const S = partitions.length;

  const forwards: (StageForward | undefined)[] = [];
  const outputs: string[] = [];
  const bounds = partitions.map(() => new BoundaryRoots(act));
  let x: Float32Array | null = null;
  for (let i = 0; i < S; i++) {
    forwards[i] = stageForward(shape, partitions[i]!, model.components, x, bounds[i]!.onOutput);
    x = forwards[i]!.output;
    outputs[i] = put(writeValue({ shape: act, data: x }));
  }
  // Memory: each component's gradient is copied, as soon as it exists, into the buffer of the file its
  // updated values will be written to (the tied embedding's, the largest, is computed there directly), and
  // the update then overwrites it there; block caches and the head's arrays are dropped as they are used.
  // So a step holds the parameters, one gradient-then-update buffer per component and the activations,
  // never a separate update or a serialized copy of it.
  const files = new GradientFiles();
  let head: HeadResult | null = headForwardBackward(
    x!,
    labels,
    model.components.norm!,
    model.components.embed!,
    c,
    B * T,
    files.embedView(c),
  );
  const headLoss = head.loss;
  const headGradient = put(writeValue({ shape: act, data: head.dHidden }));

  const gradientOut: string[] = [];
  const gradientIn: (string | null)[] = [];
  const grads: Record<string, Tensors>[] = [];
  let g = head.dHidden;
  gradientOut[S - 1] = headGradient;
  for (let i = S - 1; i >= 0; i--) {
    const r = stageBackward(shape, partitions[i]!, model.components, forwards[i]!, g, i === 0 ? head : null, {
      keep: files.keep,
      consume: true,
      onGradient: bounds[i]!.onGradient,
    });
    forwards[i] = undefined;
    if (i === 0) head = null;
    grads[i] = r.grads;
    gradientIn[i] = r.gradientIn ? put(writeValue({ shape: act, data: r.gradientIn })) : null;
    if (i > 0) {
      gradientOut[i - 1] = gradientIn[i]!;
      g = r.gradientIn!;
    }
  }
  const backs = partitions.map((p, i) => bounds[i]!.backward(p, grads[i]!));
  const norms = backs.map((b) => b.total); // each stage's normSquared, from the running sums' pass
  const scale = clipScale(norms, input.clip);

  const components: Record<string, Tensors> = { ...model.components };
  const roots: Record<string, string>[] = [];
  for (let i = 0; i < S; i++) {
    const update = files.inFiles ? applyUpdateInPlace : applyUpdate;
    const updated = update(partitions[i]!, model.components, grads[i]!, input.learningRate, scale);
    roots[i] = {};
    for (const name of partitions[i]!) {
      const file = files.get(name);
      if (file !== undefined) {
        components[name] = grads[i]![name]!; // the updated values, viewing `file`
        roots[i]![name] = put(file);
      } else {
        components[name] = updated[name]!;
        roots[i]![name] = put(writeSafetensors(updated[name]!));
      }
    }
  }
  const candidateManifest: Manifest = {
    ...manifest,
    components: { ...manifest.components, ...Object.assign({}, ...roots) },
    parent: parentRoot,
  };
  const candidateRoot = put(canonicalBytes(candidateManifest));

  const lr = toHexFloat(input.learningRate), sc = toHexFloat(scale), loss = toHexFloat(headLoss);
  const traces: StageTrace[] = partitions.map((p, i) => ({
    parent: parentRoot,
    partition: [...p],
    step: input.step,
    phase: "train" as const,
    input: i === 0 ? batchRoot : outputs[i - 1]!,
    output: outputs[i]!,
    ...(i === 0 ? { head_input: outputs[S - 1]!, head_gradient: headGradient, loss } : {}),
    gradient_out: gradientOut[i]!,
    gradient_in: gradientIn[i]!,
    norm_squared: toHexFloat(norms[i]!),
    learning_rate: lr,
    scale: sc,
    components: roots[i]!,
    ...boundaryFields(stageBoundaries(p, bounds[i]!.forward(p), backs[i]!, roots[i]!)),
  })).map((t, i) => ({
    ...t,
    chunk_roots: chunkRootsFor(manifest, t, i, (r) => {
      const known = bounds[i]!.chunkRoots.get(r);
      if (known !== undefined) return known;
      const parent = parentChunks.get(r);
      if (parent !== undefined) return parent;
      const bytes = objects.get(r);
      if (bytes === undefined) {
        throw new Error(
          `Cannot trace the step: object ${r} is neither committed nor a parent component file`,
        );
      }
      return chunkRoot(bytes);
    }),
  }));
  const traceRoots = traces.map((t) => put(canonicalBytes(t)));
  const record: StepRecord = {
    parent: parentRoot,
    model_root: candidateRoot,
    batch: batchRoot,
    step: input.step,
    traces: traceRoots,
    norms: norms.map(toHexFloat),
    clip: toHexFloat(input.clip),
    learning_rate: lr,
    scale: sc,
    loss,
  };
  const recordRoot = put(canonicalBytes(record));
  return {
    loss: headLoss,
    norms,
    scale,
    traces,
    record,
    recordRoot,
    candidate: { config: c, components },
    candidateManifest,
    candidateRoot,
    objects,
  };
}
