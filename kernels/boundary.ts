/**
 * Block-boundary commitments of a stage trace (PROTOCOL §10.4): for each transformer block of the stage, in
 * partition order, the root of its output activation, the root of the gradient at its input, the root of its
 * updated component and the running float64 squared-gradient sum through it; on stage 0 also the root of the
 * embedding's output (the first block's input) and the running sum through `embed` and `norm`. Running sums
 * continue one another (`normSquaredFrom`), so the last one has exactly the bits of the stage's norm.
 *
 * @example
 * ```ts
 * import { BoundaryRoots } from "./boundary.ts";
 * // const b = new BoundaryRoots([B, T, C]);
 * // stageForward(shape, partition, components, x, b.onOutput);
 * // stageBackward(shape, partition, components, f, g, head, { onGradient: b.onGradient });
 * // b.commitments(partition, grads, componentRoots); // { head, blocks }
 * ```
 */
import { chunkRoot } from "../core/chunk_tree.ts";
import { sha256Hex } from "../core/digest.ts";
import { toHexFloat } from "../core/hex_float.ts";
import { blockIndex } from "./model.ts";
import { type Tensors, writeValue } from "./safetensors.ts";
import { compareCodePoints } from "../core/canonical.ts";
import { normSquared } from "./stage.ts";
import { resultBytes, runTask, type SumSquaresTask } from "./task_ops.ts";

/** Which block of a stage a challenge names: a transformer block's index in the stage, or stage 0's head. */
export type BlockRef = number | "head";

/** How far a pinpointed challenge replays: forward only, through the backward, or through the update. */
export type BlockPhase = "forward" | "backward" | "update";

/** The phases, in replay order. */
export const BLOCK_PHASES: readonly BlockPhase[] = ["forward", "backward", "update"];

/** The commitments of one transformer block of a stage. */
export interface BlockCommitment {
  /** Root of the block's output activation [B, T, C]. */
  readonly output: string;
  /** Root of the gradient at the block's input [B, T, C]. */
  readonly gradient_in: string;
  /** Root of the block's updated component. */
  readonly component: string;
  /** Hex float64: the stage's running squared-gradient sum through this block. */
  readonly norm_squared: string;
}

/** The commitments of a stage: stage 0's embedding output and running sum through embed and norm, and each block's. */
export interface StageBoundaries {
  readonly head: { readonly embedding: string; readonly norm_squared: string } | null;
  readonly blocks: BlockCommitment[];
}

/** The root of an activation or gradient file of shape `act`. */
export function activationRoot(act: readonly number[], data: Float32Array): string {
  return sha256Hex(writeValue({ shape: [...act], data }));
}

/** The block names of a partition, in order. */
export function blocksOf(partition: readonly string[]): string[] {
  return partition.filter((n) => blockIndex(n) >= 0);
}

/** A stage's running sums (`runningNorms`). */
export interface RunningNorms {
  readonly head: number | null;
  readonly blocks: number[];
}

/**
 * The running sums of a stage: through `embed` and `norm` (stage 0, else null), then through each block, in
 * partition order. The last value is `normSquared(partition, grads)` bit for bit.
 */
export function runningNorms(partition: readonly string[], grads: Record<string, Tensors>): RunningNorms {
  const task = runningNormsTask(partition, grads);
  const out = new Uint8Array(resultBytes(task));
  runTask(task, out);
  return runningNormsOf(partition, out);
}

/**
 * `runningNorms` as a task (`task_ops.ts`, one sequential chain of additions, so it runs whole on one
 * thread): groups of gradient arrays, the non-block components first on stage 0, then each block's, every
 * component's tensors in name order. A step runs its stages' tasks side by side (`runTasks`).
 */
export function runningNormsTask(
  partition: readonly string[],
  grads: Record<string, Tensors>,
): SumSquaresTask {
  const arrays = (names: readonly string[]) =>
    names.flatMap((n) => Object.keys(grads[n]!).sort(compareCodePoints).map((t) => grads[n]![t]!.data));
  const groups = blocksOf(partition).map((n) => arrays([n]));
  if (partition[0] === "embed") groups.unshift(arrays(partition.filter((n) => blockIndex(n) < 0)));
  return { op: "sum_squares", groups };
}

/** The running sums from the result of `runningNormsTask(partition, …)`. */
export function runningNormsOf(partition: readonly string[], result: Uint8Array): RunningNorms {
  const sums = Array.from(new Float64Array(result.slice().buffer));
  const head = partition[0] === "embed" ? sums.shift()! : null;
  return { head, blocks: sums };
}

/**
 * The stage's `normSquared` from its running sums: their last value when they add the partition's
 * components in the partition's own order (blocks only, or stage 0's `embed` first with every other
 * non-block component before the blocks; the same additions in the same order, so the same bits), else
 * summed again. Saves the step a second pass over every gradient.
 */
export function totalFromRunning(
  partition: readonly string[],
  grads: Record<string, Tensors>,
  norms: { head: number | null; blocks: readonly number[] },
): number {
  const first = partition.findIndex((n) => blockIndex(n) >= 0);
  const blocksLast = first < 0 || partition.slice(first).every((n) => blockIndex(n) >= 0);
  const headFirst = first === 0 || partition[0] === "embed";
  if (!blocksLast || !headFirst) return normSquared(partition, grads);
  return norms.blocks.at(-1) ?? norms.head ?? 0;
}

/** What a `BoundaryRoots` does besides hashing. */
export interface BoundaryOptions {
  /** Receives every boundary file with its root (a referee keeps what a challenge will need). */
  readonly keep?: (root: string, bytes: Uint8Array) => void;
  /**
   * Test and demo forgers (`--forge`): change a block's output (`embed`: the embedding's) or the gradient
   * at its input in place before it is hashed; the rest of the stage then runs on the changed values, so
   * every commitment stays graph-consistent and only a replay of that block can tell.
   */
  readonly forge?: {
    readonly output?: (name: string, y: Float32Array) => void;
    readonly gradient?: (name: string, dx: Float32Array) => void;
  };
}

/** Collects the activation and gradient roots of a stage while it runs forward and backward. */
export class BoundaryRoots {
  embedding: string | null = null;
  readonly outputs = new Map<string, string>();
  readonly gradients = new Map<string, string>();
  /** The chunk root (`core/chunk_tree.ts`) of every boundary file hashed so far, by its content root. */
  readonly chunkRoots = new Map<string, string>();

  constructor(readonly act: readonly number[], readonly options: BoundaryOptions = {}) {}

  private root(data: Float32Array): string {
    const bytes = writeValue({ shape: [...this.act], data });
    const root = sha256Hex(bytes);
    this.chunkRoots.set(root, chunkRoot(bytes));
    this.options.keep?.(root, bytes);
    return root;
  }

  /** For `stageForward`'s `onOutput`. */
  readonly onOutput = (name: string, y: Float32Array): void => {
    this.options.forge?.output?.(name, y);
    const root = this.root(y);
    if (name === "embed") this.embedding = root;
    else this.outputs.set(name, root);
  };

  /** For `stageBackward`'s `onGradient`. */
  readonly onGradient = (name: string, dx: Float32Array): void => {
    this.options.forge?.gradient?.(name, dx);
    this.gradients.set(name, this.root(dx));
  };

  /** Whether a forward has reported to it (stage 0's embedding, or any block). */
  get forwarded(): boolean {
    return this.embedding !== null || this.outputs.size > 0;
  }

  /** The forward part alone: the embedding's root (stage 0) and each block's output root, in order. */
  forward(partition: readonly string[]): { embedding: string | null; outputs: string[] } {
    return { embedding: this.embedding, outputs: blocksOf(partition).map((n) => this.outputs.get(n)!) };
  }

  /**
   * The backward part alone: each block's input-gradient root and running sum, stage 0's head sum, and the
   * stage's whole `normSquared` (`total`, from the same pass: `totalFromRunning`). `norms`, when given, are
   * the stage's `runningNorms` already summed (e.g. on a task worker).
   */
  backward(
    partition: readonly string[],
    grads: Record<string, Tensors>,
    norms: RunningNorms = runningNorms(partition, grads),
  ): { head: string | null; blocks: { gradient_in: string; norm_squared: string }[]; total: number } {
    return {
      total: totalFromRunning(partition, grads, norms),
      head: norms.head === null ? null : toHexFloat(norms.head),
      blocks: blocksOf(partition).map((n, i) => ({
        gradient_in: this.gradients.get(n)!,
        norm_squared: toHexFloat(norms.blocks[i]!),
      })),
    };
  }
}

/** Assembles a stage's commitments from its forward and backward parts and its updated component roots. */
export function stageBoundaries(
  partition: readonly string[],
  forward: { embedding: string | null; outputs: readonly string[] },
  backward: { head: string | null; blocks: readonly { gradient_in: string; norm_squared: string }[] },
  components: Readonly<Record<string, string>>,
): StageBoundaries {
  const names = blocksOf(partition);
  return {
    head: forward.embedding === null || backward.head === null
      ? null
      : { embedding: forward.embedding, norm_squared: backward.head },
    blocks: names.map((n, i) => ({
      output: forward.outputs[i]!,
      gradient_in: backward.blocks[i]!.gradient_in,
      component: components[n]!,
      norm_squared: backward.blocks[i]!.norm_squared,
    })),
  };
}

/** The trace fields of the commitments: `blocks`, and on stage 0 `embedding` and `head_norm_squared`. */
export function boundaryFields(b: StageBoundaries): {
  blocks: BlockCommitment[];
  embedding?: string;
  head_norm_squared?: string;
} {
  return {
    blocks: b.blocks,
    ...(b.head ? { embedding: b.head.embedding, head_norm_squared: b.head.norm_squared } : {}),
  };
}
