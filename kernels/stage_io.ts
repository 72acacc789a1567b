/**
 * A stage computed from committed bytes to committed bytes, as a Worker runs it (PROTOCOL §10.3): it holds
 * only its own components, receives the previous stage's activation (or, on stage 0, the batch), later the
 * gradient of its output, and last the global clip scale. Every output is the canonical file whose root is
 * committed; `trainStep` and `replayStage` compute exactly the same bits.
 *
 * Memory, as in `trainStep`: the backward copies each component's gradient, as soon as it exists, into the
 * buffer of the file its update will be written to (`GradientFiles`), drops the forward's block caches as it
 * uses them and adds the embedding lookup's rows into the head's gradient in place; the update then
 * overwrites each gradient with its new value there, so the returned files are those buffers, never a
 * second copy; the parameters are views of the component files it was opened with (never written).
 * Each phase therefore runs once: a repeated backward or an update with other arguments is
 * `invalid_transition` (the same update again returns the same files), and a phase that failed part-way
 * fails the same way again (reopen the stage to recompute).
 *
 * @example
 * ```ts
 * import { openStage } from "./stage_io.ts";
 * // const s = openStage({ config, partition, components, batch });
 * // const output = s.forward(inputBytes);          // stage > 0 (stage 0: s.forward(null))
 * // const { loss, headGradient } = s.head(headInputBytes);   // stage 0 only
 * // const { gradientIn, normSquared } = s.backward(gradientOutBytes);
 * // const files = s.update(learningRate, scale);    // component name → safetensors bytes
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { type Batch, batchArrays, validateBatch } from "./batch.ts";
import { type BoundaryOptions, BoundaryRoots } from "./boundary.ts";
import { headDim, type ModelConfig } from "./config.ts";
import { headForwardBackward, type HeadResult } from "./head.ts";
import { readComponent } from "./manifest.ts";
import { rotaryTables } from "./rotary.ts";
import { GradientFiles } from "./gradient_files.ts";
import { readValue, type Tensors, writeSafetensors, writeValue } from "./safetensors.ts";
import {
  applyUpdate,
  applyUpdateInPlace,
  stageBackward,
  type StageForward,
  stageForward,
  type StepShape,
} from "./stage.ts";

/** What a stage is opened with. */
export interface StageSetup {
  readonly config: ModelConfig;
  readonly partition: readonly string[];
  /** The canonical safetensors bytes of every component of the partition. */
  readonly components: Record<string, Uint8Array>;
  readonly batch: Batch;
  /** What the block-boundary commitments also do (keep the files, forge; default: only hash). */
  readonly boundaries?: BoundaryOptions;
}

/** One stage of one step, holding what its later phases need. */
export interface OpenStage {
  /** Runs the stage forward; `input` is null on stage 0, else the previous stage's output file. */
  forward(input: Uint8Array | null): Uint8Array;
  /** After `forward`: the embedding's output root (stage 0, else null) and each block's output root. */
  forwardBoundaries(): { embedding: string | null; outputs: string[] };
  /** The chunk root of every boundary activation and gradient the stage has hashed so far, by content root. */
  boundaryChunkRoots(): Record<string, string>;
  /** Stage 0 only: final norm, head and loss on the last stage's output; returns the loss and head gradient. */
  head(headInput: Uint8Array): { loss: number; headGradient: Uint8Array };
  /** Backward from the gradient of the stage's output: the gradient of its input (null on stage 0). */
  backward(gradientOut: Uint8Array): {
    gradientIn: Uint8Array | null;
    normSquared: number;
    /** The block-boundary commitments of the backward (PROTOCOL §10.4), see `BoundaryRoots.backward`. */
    boundaries: { head: string | null; blocks: { gradient_in: string; norm_squared: string }[] };
  };
  /** The updated components' files with the global scale. */
  update(learningRate: number, scale: number): Record<string, Uint8Array>;
}

function order(what: string): ProtocolError {
  return new ProtocolError("invalid_transition", `Cannot run stage: ${what}`);
}

/** Parses the stage's components and batch (`invalid_tensor`/`invalid_model` when malformed). */
export function openStage(setup: StageSetup): OpenStage {
  const c = setup.config;
  const batch = validateBatch(setup.batch as never, c);
  const partition = [...setup.partition];
  const isHead = partition[0] === "embed";
  const components: Record<string, Tensors> = {};
  for (const name of partition) {
    const bytes = setup.components[name];
    if (!bytes) throw new ProtocolError("invalid_model", `Cannot open stage: component ${name} is missing`);
    components[name] = readComponent(c, name, bytes, { view: true }); // the parameters are the file's bytes
  }
  const { B, T, ids, labels } = batchArrays(batch);
  const shape: StepShape = { config: c, B, T, ids, tables: rotaryTables(T, headDim(c), c.rope_theta) };
  const act = [B, T, c.hidden_size];
  let fwd: StageForward | null = null;
  let head: HeadResult | null = null;
  let grads: Record<string, Tensors> | null = null;
  let backwardRan = false;
  let updated: { learningRate: number; scale: number; files: Record<string, Uint8Array> } | null = null;
  let failed: { error: unknown } | null = null; // a phase that threw after it began overwriting state
  const files = new GradientFiles();
  const guarded = <T>(run: () => T): T => {
    if (failed) throw failed.error;
    try {
      return run();
    } catch (e) {
      failed = { error: e };
      throw e;
    }
  };
  let bounds = new BoundaryRoots(act, setup.boundaries);
  return {
    forward(input) {
      if (isHead !== (input === null)) {
        throw order(isHead ? "stage 0 embeds the batch" : "an input activation is needed");
      }
      bounds = new BoundaryRoots(act, setup.boundaries);
      const x = input ? readValue(input, act).data : null;
      fwd = stageForward(shape, partition, components, x, bounds.onOutput);
      return writeValue({ shape: act, data: fwd.output });
    },
    forwardBoundaries() {
      if (!bounds.forwarded) throw order("the boundaries need the forward first");
      return bounds.forward(partition);
    },
    boundaryChunkRoots() {
      return Object.fromEntries(bounds.chunkRoots);
    },
    head(headInput) {
      if (!isHead) throw order("only stage 0 runs the head");
      head = headForwardBackward(
        readValue(headInput, act).data,
        labels,
        components.norm!,
        components.embed!,
        c,
        B * T,
        files.embedView(c),
      );
      return { loss: head.loss, headGradient: writeValue({ shape: act, data: head.dHidden }) };
    },
    backward(gradientOut) {
      if (backwardRan) throw order("backward already ran on this stage");
      if (!fwd || (isHead && !head)) {
        throw order("backward needs the forward (and on stage 0 the head) first");
      }
      const dy = readValue(gradientOut, act).data;
      const forward = fwd, headResult = head;
      const r = guarded(() => {
        backwardRan = true;
        fwd = null; // its caches are consumed below
        head = null; // its embedding gradient is added into in place
        return stageBackward(shape, partition, components, forward, dy, headResult, {
          keep: files.keep,
          into: files.into,
          consume: true,
          onGradient: bounds.onGradient,
        });
      });
      grads = r.grads;
      const { total, ...boundaries } = bounds.backward(partition, r.grads); // total: the stage's normSquared
      return {
        gradientIn: r.gradientIn ? writeValue({ shape: act, data: r.gradientIn }) : null,
        normSquared: total,
        boundaries,
      };
    },
    update(learningRate, scale) {
      if (updated) {
        if (updated.learningRate === learningRate && updated.scale === scale) return { ...updated.files };
        throw order(
          `update already ran with learning rate ${updated.learningRate} and scale ${updated.scale}, not ${learningRate} and ${scale}`,
        );
      }
      if (!grads) throw order("update needs the backward first");
      const g = grads;
      const out = guarded(() => {
        if (!files.inFiles) {
          const next = applyUpdate(partition, components, g, learningRate, scale);
          return Object.fromEntries(partition.map((name) => [name, writeSafetensors(next[name]!)]));
        }
        applyUpdateInPlace(partition, components, g, learningRate, scale); // each gradient becomes its update
        return Object.fromEntries(partition.map((name) => [name, files.get(name)!]));
      });
      grads = null;
      updated = { learningRate, scale, files: out };
      return { ...out };
    },
  };
}
