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
import { chunkRoot } from "../core/chunk_tree.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { toHex } from "../core/hex.ts";
import { toHexFloat } from "../core/hex_float.ts";
import { type Batch, batchArrays, validateBatch } from "./batch.ts";
import {
  boundaryFields,
  BoundaryRoots,
  runningNormsOf,
  runningNormsTask,
  stageBoundaries,
} from "./boundary.ts";
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
import type { Task } from "./task_ops.ts";
import { isShared, runTasks, sharedBytes, startTaskWorkers } from "./task_pool.ts";
import type { StageTrace, StepRecord } from "./trace.ts";
import { chunkRootsFor } from "./trace_chunks.ts";
import { startWasmMatmulThreads } from "./wasm/matmul_wasm.ts";

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
  startWasmMatmulThreads(); // both pools load while the step validates, embeds and runs its first kernels
  startTaskWorkers();
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
  // The parent's component files, as the pieces their bytes are where the step holds their tensors
  // (`safetensorsParts`), so no file is built; they are hashed (content root and chunk root) with the
  // updated files at the end, side by side. Only tensors whose file bytes hash to the manifest's root count;
  // a component with a bad shape is left for the forward pass to refuse, and one with a non-finite value
  // (whose bytes no manifest root names) for the update, as before.
  const parentParts = new Map<string, Uint8Array[]>();
  for (const [name, r] of Object.entries(manifest.components)) {
    const tensors = model.components[name];
    try {
      if (tensors !== undefined) parentParts.set(r, shareable(safetensorsParts(tensors)));
    } catch {
      // not a canonical file: no chunk root for it
    }
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
  const files = new GradientFiles({ shared: true }); // task workers hash and update them where they are
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
      into: files.into,
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
  // Each stage's running sums are one chain of additions; the stages' chains run side by side.
  const sums = runTasks(partitions.map((p, i) => runningNormsTask(p, grads[i]!)));
  const backs = partitions.map((p, i) => bounds[i]!.backward(p, grads[i]!, runningNormsOf(p, sums[i]!)));
  const norms = backs.map((b) => b.total); // each stage's normSquared, from the running sums' pass
  const scale = clipScale(norms, input.clip);

  const components: Record<string, Tensors> = { ...model.components };
  const written: { stage: number; name: string; bytes: Uint8Array }[] = [];
  for (let i = 0; i < S; i++) {
    const update = files.inFiles ? applyUpdateInPlace : applyUpdate;
    const updated = update(partitions[i]!, model.components, grads[i]!, input.learningRate, scale);
    for (const name of partitions[i]!) {
      const file = files.get(name);
      if (file !== undefined) {
        components[name] = grads[i]![name]!; // the updated values, viewing `file`
        written.push({ stage: i, name, bytes: file });
      } else {
        components[name] = updated[name]!;
        written.push({ stage: i, name, bytes: writeSafetensors(updated[name]!) });
      }
    }
  }
  // Every updated and parent file's content root and chunk root: independent digests, side by side (each
  // digest runs whole on one thread; the roots are the same for any thread count).
  const parents = [...parentParts];
  const digests = runTasks([
    ...written.flatMap((f) => digestTasks([f.bytes])),
    ...parents.flatMap(([, parts]) => digestTasks(parts)),
  ]).map(toHex);
  const roots: Record<string, string>[] = partitions.map(() => ({}));
  const writtenChunks = new Map<string, string>();
  written.forEach((f, k) => {
    const root = digests[2 * k]!;
    objects.set(root, f.bytes);
    roots[f.stage]![f.name] = root;
    writtenChunks.set(root, digests[2 * k + 1]!);
  });
  const parentChunks = new Map<string, string>();
  parents.forEach(([r], k) => {
    const at = 2 * (written.length + k);
    if (digests[at] === r) parentChunks.set(r, digests[at + 1]!);
  });
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
      const parent = parentChunks.get(r) ?? writtenChunks.get(r);
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

/** The content-root and chunk-root tasks of one file's bytes (in pieces). */
function digestTasks(parts: readonly Uint8Array[]): Task[] {
  return [{ op: "sha256", parts }, { op: "chunk_root", parts }];
}

/**
 * The pieces with every one not on shared memory copied there when it is small (a file's header), so a
 * task worker may hash the whole file; large pieces stay where they are (and keep the file's digests on the
 * calling thread unless they are already shared).
 */
function shareable(parts: Uint8Array[]): Uint8Array[] {
  return parts.map((p) => {
    if (isShared(p) || p.byteLength > 1 << 16) return p;
    const copy = sharedBytes(p.byteLength);
    copy.set(p);
    return copy;
  });
}
