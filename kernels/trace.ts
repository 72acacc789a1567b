/**
 * Stage traces and the step record (PROTOCOL §10.4), and the graph checks a validator runs on a claim
 * without any neural work.
 *
 * A trace (one per stage, `traces[i]` is stage i) commits `{parent, partition, step, phase: "train", input,
 * output, head_input?, head_gradient?, loss?, gradient_out, gradient_in, norm_squared, learning_rate, scale,
 * components}`: `input` is the batch root on stage 0 and the previous stage's output otherwise;
 * `gradient_out` is the gradient of the stage's output (received), `gradient_in` the gradient of its input
 * (sent back; null on stage 0); the head fields are present on stage 0 only; floats are hex floats;
 * `components` maps the partition to the updated component roots; `blocks` (and on stage 0 `embedding` and
 * `head_norm_squared`) are the block-boundary commitments of `boundary.ts`; `chunk_roots` the chunk root of
 * each of the stage's objects (`trace_chunks.ts`). The record is `{parent,
 * model_root, batch, step, traces (trace ids), norms, clip, learning_rate, scale, loss}`.
 *
 * @example
 * ```ts
 * import { checkRecord } from "./trace.ts";
 * // const verdict = checkRecord(record, traces, parentManifest, candidateManifest, { learning_rate, clip });
 * ```
 */
import { type JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { reject, type Rejection } from "../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../core/hex_float.ts";
import { isRoot } from "../core/hex.ts";
import { type BlockCommitment, blocksOf } from "./boundary.ts";
import type { Manifest } from "./manifest.ts";
import { blockIndex } from "./model.ts";
import { clipScale } from "./stage.ts";
import { chunkRootsError } from "./trace_chunks.ts";

/** One stage's committed trace. */
export interface StageTrace {
  readonly parent: string;
  readonly partition: string[];
  readonly step: number;
  readonly phase: "train";
  readonly input: string;
  readonly output: string;
  readonly head_input?: string;
  readonly head_gradient?: string;
  readonly loss?: string;
  readonly gradient_out: string;
  readonly gradient_in: string | null;
  readonly norm_squared: string;
  readonly learning_rate: string;
  readonly scale: string;
  readonly components: Record<string, string>;
  /** One commitment per transformer block of the partition, in order. */
  readonly blocks: BlockCommitment[];
  /** Stage 0: the root of the embedding's output (the first block's input). */
  readonly embedding?: string;
  /** Stage 0: the running squared-gradient sum through `embed` and `norm`. */
  readonly head_norm_squared?: string;
  /** The chunk root of each object of the stage, by content root (`trace_chunks.ts`). */
  readonly chunk_roots: Record<string, string>;
}

/** The committed record of a whole step. */
export interface StepRecord {
  readonly parent: string;
  readonly model_root: string;
  readonly batch: string;
  readonly step: number;
  readonly traces: string[];
  readonly norms: string[];
  readonly clip: string;
  readonly learning_rate: string;
  readonly scale: string;
  readonly loss: string;
}

/** What genesis fixes for every step. */
export interface StepParams {
  readonly learning_rate: number;
  readonly clip: number;
}

function hexOk(v: unknown): boolean {
  try {
    fromHexFloat(v as string);
    return true;
  } catch {
    return false;
  }
}

function traceShapeError(t: StageTrace, i: number): string | null {
  const head = i === 0;
  const keys = Object.keys(t).sort().join(",");
  const want = [
    "blocks",
    "chunk_roots",
    "components",
    ...(head ? ["embedding"] : []),
    "gradient_in",
    "gradient_out",
    ...(head ? ["head_gradient", "head_input", "head_norm_squared"] : []),
    "input",
    "learning_rate",
    ...(head ? ["loss"] : []),
    "norm_squared",
    "output",
    "parent",
    "partition",
    "phase",
    "scale",
    "step",
  ].join(",");
  if (keys !== want) return `trace ${i} has fields ${keys}`;
  if (t.phase !== "train") return `trace ${i} phase is ${JSON.stringify(t.phase)}`;
  for (const f of ["parent", "input", "output", "gradient_out"] as const) {
    if (!isRoot(t[f])) return `trace ${i} ${f} is not a root`;
  }
  if (head ? t.gradient_in !== null : !isRoot(t.gradient_in)) return `trace ${i} gradient_in is wrong`;
  if (
    head && (!isRoot(t.head_input) || !isRoot(t.head_gradient) || !hexOk(t.loss) || !isRoot(t.embedding) ||
      !hexOk(t.head_norm_squared))
  ) {
    return "trace 0 head fields are malformed";
  }
  for (const f of ["norm_squared", "learning_rate", "scale"] as const) {
    if (!hexOk(t[f])) return `trace ${i} ${f} is not a hex float`;
  }
  if (!Array.isArray(t.partition) || t.partition.length === 0) return `trace ${i} partition is empty`;
  const names = Object.keys(t.components ?? {});
  if (names.length !== t.partition.length || !t.partition.every((n) => isRoot(t.components[n]))) {
    return `trace ${i} components do not match its partition`;
  }
  return blocksShapeError(t, i);
}

const BLOCK_KEYS = "component,gradient_in,norm_squared,output";

function blocksShapeError(t: StageTrace, i: number): string | null {
  const names = blocksOf(t.partition);
  if (!Array.isArray(t.blocks) || t.blocks.length !== names.length) {
    return `trace ${i} has ${
      Array.isArray(t.blocks) ? t.blocks.length : "no"
    } block commitments for ${names.length} blocks`;
  }
  for (let j = 0; j < names.length; j++) {
    const b = t.blocks[j] as unknown as Record<string, unknown>;
    if (
      b === null || typeof b !== "object" || Array.isArray(b) ||
      Object.keys(b).sort().join(",") !== BLOCK_KEYS
    ) {
      return `trace ${i} block ${j} has fields ${
        b && typeof b === "object" ? Object.keys(b).sort().join(",") : b
      }`;
    }
    if (!isRoot(b.output) || !isRoot(b.gradient_in) || !isRoot(b.component) || !hexOk(b.norm_squared)) {
      return `trace ${i} block ${j} commitments are malformed`;
    }
  }
  return null;
}

/**
 * The chain of a stage's block-boundary commitments (PROTOCOL §10.4): the last block's output is the stage's
 * output (stage 0 without blocks: the embedding is), the first block's input gradient is the stage's
 * (past stage 0), each block's component is the stage's component of that name, and the running sums never
 * decrease, start at zero or above and end at the stage's norm (stage 0: the head sum first).
 */
export function boundaryChainError(t: StageTrace, i: number): string | null {
  const names = blocksOf(t.partition), n = names.length;
  const last = n === 0 ? t.embedding : t.blocks[n - 1]!.output;
  if (last !== t.output) return `stage ${i}'s last block output is not the stage's output`;
  if (i > 0 && (n === 0 || t.blocks[0]!.gradient_in !== t.gradient_in)) {
    return `stage ${i}'s first block input gradient is not the stage's gradient_in`;
  }
  for (let j = 0; j < n; j++) {
    if (t.blocks[j]!.component !== t.components[names[j]!]) {
      return `stage ${i} block ${j} component is not the stage's ${names[j]}`;
    }
  }
  let previous = i === 0 ? fromHexFloat(t.head_norm_squared!) : 0;
  if (!(previous >= 0)) return `stage ${i}'s head squared norm is ${t.head_norm_squared}`;
  for (let j = 0; j < n; j++) {
    const v = fromHexFloat(t.blocks[j]!.norm_squared);
    if (!(v >= previous)) {
      return `stage ${i} block ${j} running squared norm ${
        t.blocks[j]!.norm_squared
      } is below the one before it`;
    }
    previous = v;
  }
  const total = n === 0 ? t.head_norm_squared! : t.blocks[n - 1]!.norm_squared;
  if (total !== t.norm_squared) {
    return `stage ${i}'s block sums end at ${total}, the stage's norm is ${t.norm_squared}`;
  }
  return null;
}

/** Component names in model order: `embed`, `norm`, then blocks by number; anything else last, by name. */
function modelOrder(names: readonly string[]): string[] {
  const rank = (n: string) =>
    n === "embed" ? -2 : n === "norm" ? -1 : blockIndex(n) >= 0 ? blockIndex(n) : Infinity;
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The graph checks of PROTOCOL §10.4: trace ids, coverage and order of the partitions, the activation and
 * gradient chain, the norms and the recomputed scale, genesis lr and clip, and that the candidate manifest is
 * the parent with only the new component roots (and its parent link). `invalid_record` on the first failure.
 */
export function checkRecord(
  record: StepRecord,
  traces: readonly StageTrace[],
  parent: Manifest,
  candidate: Manifest,
  params: StepParams,
): { ok: true } | Rejection {
  const fail = (message: string) => reject("invalid_record", `Cannot accept record: ${message}`);
  const S = traces.length;
  if (S === 0 || record.traces.length !== S || record.norms.length !== S) return fail(`has ${S} traces`);
  for (let i = 0; i < S; i++) {
    if (id(traces[i] as unknown as JsonValue) !== record.traces[i]) {
      return fail(`trace ${i} does not match its id`);
    }
    const shape = traceShapeError(traces[i]!, i);
    if (shape) return fail(shape);
  }
  if (record.parent !== id(parent as unknown as JsonValue)) {
    return fail("parent is not the parent manifest's root");
  }
  if (record.model_root !== id(candidate as unknown as JsonValue)) {
    return fail("model_root is not the candidate's root");
  }
  const order = traces.flatMap((t) => t.partition);
  // The model's order (embed, norm, blocks by number), whatever order the manifest's keys arrived in: a
  // manifest decoded from canonical JSON lists its components by name, blocks before embed.
  const expected = modelOrder(Object.keys(parent.components));
  if (order.join(",") !== expected.join(",")) {
    return fail(`partitions cover ${order.join(",")}, expected ${expected.join(",")} in that order`);
  }
  if (traces[0]!.partition[0] !== "embed" || traces[0]!.partition[1] !== "norm") {
    return fail("stage 0 must own embed and norm");
  }
  if (record.learning_rate !== toHexFloat(params.learning_rate)) {
    return fail(`learning_rate is ${record.learning_rate}`);
  }
  if (record.clip !== toHexFloat(params.clip)) return fail(`clip is ${record.clip}`);
  for (let i = 0; i < S; i++) {
    const t = traces[i]!;
    if (t.parent !== record.parent || t.step !== record.step) {
      return fail(`trace ${i} has another parent or step`);
    }
    if (t.learning_rate !== record.learning_rate || t.scale !== record.scale) {
      return fail(`trace ${i} lr or scale differ`);
    }
    if (t.norm_squared !== record.norms[i]) return fail(`norm ${i} is not trace ${i}'s`);
    const chain = boundaryChainError(t, i);
    if (chain) return fail(chain);
    const input = i === 0 ? record.batch : traces[i - 1]!.output;
    if (t.input !== input) {
      return fail(`stage ${i} input is not ${i === 0 ? "the batch" : `stage ${i - 1}'s output`}`);
    }
    const gradOut = i === S - 1 ? traces[0]!.head_gradient : traces[i + 1]!.gradient_in;
    if (t.gradient_out !== gradOut) {
      return fail(`stage ${i} gradient_out is not the next stage's gradient_in`);
    }
  }
  if (traces[0]!.head_input !== traces[S - 1]!.output) {
    return fail("head_input is not the last stage's output");
  }
  if (record.loss !== traces[0]!.loss) return fail("loss is not stage 0's");
  const scale = clipScale(record.norms.map(fromHexFloat), params.clip);
  if (record.scale !== toHexFloat(scale)) {
    return fail(`scale is ${record.scale}, recomputed ${toHexFloat(scale)}`);
  }
  const merged = Object.assign({}, ...traces.map((t) => t.components));
  const want = { ...parent, components: merged, parent: record.parent };
  if (id(want as unknown as JsonValue) !== record.model_root) {
    return fail("the candidate manifest is not the parent with the new component roots");
  }
  const chunks = chunkRootsError(parent, traces);
  if (chunks) return fail(chunks);
  return { ok: true };
}
