/**
 * One pipeline stage of a training step, as pure functions of in-memory values (PROTOCOL §10.3). A stage
 * owns a partition: stage 0 `embed`, `norm` and maybe blocks; later stages contiguous blocks.
 *
 * - `stageForward`: stage 0 embeds the batch; every stage runs its blocks → activation [B·T, C].
 * - `headForwardBackward` (in `head.ts`) runs on stage 0 with the last stage's output.
 * - `stageBackward`: from the gradient of the stage's output, through its blocks in reverse → the gradient of
 *   its input (null on stage 0) and of every parameter. On stage 0 the embedding's gradient is
 *   `fround(head part + lookup part)` elementwise and the final norm's is the head's.
 * - `normSquared`: Σ grad² in float64 over components in partition order, tensors in name order, elements
 *   ascending (each float32 square is exact in float64; each sum is rounded to float64).
 * - `clipScale`: `min(1, clip / (sqrt(Σ norms in stage order) + 1e-6))` in float64. Every activation,
 *   gradient and parameter gradient is the same bits under any placement; only this float64 sum is grouped
 *   by stage, so two placements can differ in its last bit (and, rarely, in `fround(lr · scale)`). That is
 *   why the norms and the scale are committed and the graph checks recompute the scale from them.
 * - `applyUpdate`: `eta = fround(lr · scale)` then `p ← fround(p − fround(eta · g))`.
 *
 * @example
 * ```ts
 * import { clipScale } from "./stage.ts";
 * clipScale([3, 1], 1); // 1 / (2 + 1e-6)
 * ```
 */
import { compareCodePoints } from "../core/canonical.ts";
import { blockBackward, type BlockCache, blockForward } from "./block.ts";
import type { ModelConfig } from "./config.ts";
import { embeddingBackwardRows, embeddingForward, embeddingGradient } from "./embedding.ts";
import type { HeadResult } from "./head.ts";
import { blockIndex, EMBED_TENSOR, NORM_TENSOR } from "./model.ts";
import type { RotaryTables } from "./rotary.ts";
import type { Tensors } from "./safetensors.ts";
import { assertFinite } from "./tensor.ts";
import { type SgdTask, sumSquaresFrom } from "./task_ops.ts";
import { runTasks } from "./task_pool.ts";

/** What every stage function of one step shares. */
export interface StepShape {
  readonly config: ModelConfig;
  readonly B: number;
  readonly T: number;
  readonly ids: Int32Array; // ids: [B·T]
  readonly tables: RotaryTables;
}

/** A stage's forward result: its output and the caches its backward can reuse. */
export interface StageForward {
  readonly output: Float32Array; // output: [B·T, C]
  readonly caches: BlockCache[];
}

/**
 * Runs a stage forward. `input` is null on stage 0 (it embeds `shape.ids`), else the previous output.
 * `onOutput`, when given, sees the embedding's output (name `embed`) and then each block's output, in order
 * (the block-boundary commitments of PROTOCOL §10.4); the rest of the stage runs on what it leaves there
 * (only a forger, `boundary.ts`, changes it).
 */
export function stageForward(
  shape: StepShape,
  partition: readonly string[],
  components: Record<string, Tensors>,
  input: Float32Array | null,
  onOutput?: (name: string, y: Float32Array) => void,
): StageForward {
  const { config: c, B, T } = shape;
  let x = partition.includes("embed")
    ? embeddingForward(components.embed![EMBED_TENSOR]!.data, shape.ids, c.vocab_size, c.hidden_size)
    : input!;
  assertFinite(x, "stage input");
  if (partition.includes("embed")) onOutput?.("embed", x);
  const caches: BlockCache[] = [];
  for (const name of partition) {
    if (blockIndex(name) < 0) continue;
    const r = blockForward(x, components[name]!, c, B, T, shape.tables);
    caches.push(r.cache);
    x = r.y;
    onOutput?.(name, x);
  }
  return { output: x, caches };
}

/** How `stageBackward` may save memory (a training step uses both; a referee's replay neither). */
export interface BackwardOptions {
  /**
   * Called with each component's gradient as soon as it exists; what it returns is kept instead (e.g. the
   * same values in the buffer of the file they will be written to), so the original can be dropped.
   */
  readonly keep?: (name: string, grads: Tensors) => Tensors;
  /**
   * When true, the forward's block caches are dropped as they are used and the head's embedding gradient is
   * added into in place: neither can be used again afterwards.
   */
  readonly consume?: boolean;
  /** Called with the gradient of each block's input as soon as it exists (only a forger changes it). */
  readonly onGradient?: (name: string, dx: Float32Array) => void;
  /**
   * Where a block's gradients are computed (`blockBackward`'s `into`, e.g. views into the file `keep` then
   * keeps them in, so its weight gradients need no copy), given the component's name and tensor shapes.
   */
  readonly into?: (name: string, shapes: Record<string, readonly number[]>) => Tensors | undefined;
}

/** Runs a stage backward from the gradient of its output; `head` is required on stage 0. */
export function stageBackward(
  shape: StepShape,
  partition: readonly string[],
  components: Record<string, Tensors>,
  forward: StageForward,
  gradientOut: Float32Array,
  head: HeadResult | null,
  options: BackwardOptions = {},
): { gradientIn: Float32Array | null; grads: Record<string, Tensors> } {
  const { config: c, B, T } = shape;
  const keep = options.keep ?? ((_: string, g: Tensors) => g);
  assertFinite(gradientOut, "stage output gradient");
  const grads: Record<string, Tensors> = {};
  const blocks = partition.filter((n) => blockIndex(n) >= 0);
  let dy = gradientOut;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const name = blocks[i]!;
    const p = components[name]!;
    const into = options.into?.(name, Object.fromEntries(Object.entries(p).map(([t, v]) => [t, v.shape])));
    const r = blockBackward(dy, forward.caches[i]!, p, c, B, T, shape.tables, into);
    if (options.consume) (forward.caches as (BlockCache | undefined)[])[i] = undefined;
    grads[name] = keep(name, r.grads);
    options.onGradient?.(name, r.dx);
    dy = r.dx;
  }
  if (!partition.includes("embed")) return { gradientIn: dy, grads };
  // dEmbed = head's part + the lookup's part, element by element (a row no id used adds +0).
  const C = c.hidden_size, V = c.vocab_size, fromHead = head!.dEmbed;
  const rows = embeddingBackwardRows(dy, shape.ids, V, C);
  const into = options.consume ? fromHead : new Float32Array(fromHead.length);
  const dEmbed = embeddingGradient(fromHead, rows, V, C, into); // dEmbed: [V,C]
  grads.embed = keep("embed", { [EMBED_TENSOR]: { shape: [c.vocab_size, C], data: dEmbed } });
  grads.norm = keep("norm", { [NORM_TENSOR]: { shape: [C], data: head!.dNorm } });
  return { gradientIn: null, grads };
}

/** Σ grad² in float64 over the partition's components (in partition order, tensors by name). */
export function normSquared(partition: readonly string[], grads: Record<string, Tensors>): number {
  return normSquaredFrom(0, partition, grads);
}

/**
 * `normSquared` continued from the running total `start`: the same additions in the same order, so a
 * stage's sum taken component by component (`normSquaredFrom(previous, [name], grads)`) has exactly the
 * bits of the sum over the whole stage (PROTOCOL §10.4, block-boundary commitments).
 */
export function normSquaredFrom(
  start: number,
  partition: readonly string[],
  grads: Record<string, Tensors>,
): number {
  let total = start;
  for (const name of partition) {
    const tensors = grads[name]!;
    for (const t of Object.keys(tensors).sort(compareCodePoints)) {
      total = sumSquaresFrom(total, tensors[t]!.data);
    }
  }
  return total;
}

/** The global clip scale from the stages' squared norms, summed in stage order. */
export function clipScale(norms: readonly number[], clip: number): number {
  let total = 0;
  for (const n of norms) total += n;
  return Math.min(1, clip / (Math.sqrt(total) + 1e-6));
}

/** SGD with the global scale: new tensors for every component of the partition. */
export function applyUpdate(
  partition: readonly string[],
  components: Record<string, Tensors>,
  grads: Record<string, Tensors>,
  learningRate: number,
  scale: number,
): Record<string, Tensors> {
  return sgd(partition, components, grads, learningRate, scale, (g) => new Float32Array(g.length));
}

/**
 * `applyUpdate` written into the gradients' own arrays (each new value replaces the gradient it came from):
 * the same bits with no new arrays. The gradients are gone afterwards; the returned tensors are those arrays.
 */
export function applyUpdateInPlace(
  partition: readonly string[],
  components: Record<string, Tensors>,
  grads: Record<string, Tensors>,
  learningRate: number,
  scale: number,
): Record<string, Tensors> {
  return sgd(partition, components, grads, learningRate, scale, (g) => g);
}

/** Elements per SGD task: small enough to balance threads, large enough that handing one out costs nothing. */
export const SGD_TASK_ELEMENTS = 1 << 20;

function sgd(
  partition: readonly string[],
  components: Record<string, Tensors>,
  grads: Record<string, Tensors>,
  learningRate: number,
  scale: number,
  target: (g: Float32Array) => Float32Array,
): Record<string, Tensors> {
  const eta = Math.fround(learningRate * scale);
  const out: Record<string, Tensors> = {};
  const tasks: SgdTask[] = [];
  const checks: { data: Float32Array; what: string; first: number; last: number }[] = [];
  for (const name of partition) {
    const updated: Tensors = {};
    for (const [t, p] of Object.entries(components[name]!)) {
      const g = grads[name]![t]!.data, data = target(g);
      const first = tasks.length;
      for (let lo = 0; lo < data.length || lo === 0; lo += SGD_TASK_ELEMENTS) {
        tasks.push({
          op: "sgd",
          w: p.data,
          g,
          out: data,
          eta,
          lo,
          hi: Math.min(data.length, lo + SGD_TASK_ELEMENTS),
        });
      }
      checks.push({ data, what: `updated ${name} ${t}`, first, last: tasks.length });
      updated[t] = { shape: [...p.shape], data };
    }
    out[name] = updated;
  }
  // Element ranges on any thread (each element's update stands alone), then the finiteness check in
  // partition order, so the first non-finite tensor is the one named, as in one pass.
  const finite = runTasks(tasks).map((r) => r[0] === 1);
  for (const c of checks) {
    if (!finite.slice(c.first, c.last).every((f) => f)) assertFinite(c.data, c.what); // throws at the first
  }
  return out;
}
