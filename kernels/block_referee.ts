/**
 * The on-chain referee of a pinpointed fraud challenge (PROTOCOL §5, §10.5): one block of one stage — a
 * transformer block by its index among the stage's blocks, or `"head"` on stage 0 (the embedding, the final
 * norm and the loss) — replayed from the objects `blockNeeded` lists, its forward, then (phase `backward` or
 * `update`) its backward, then (phase `update`) its update, each compared with the stage's block-boundary
 * commitments in that order. The first difference names the block and what was forged; a block whose named
 * phases all match is a `match` (the challenger loses its bond).
 *
 * @example
 * ```ts
 * import { blockNeeded, replayBlock } from "./block_referee.ts";
 * // const needed = blockNeeded(parent, trace, 1, 2, "update");      // component, input, incoming gradient
 * // const v = replayBlock({ parent, batch, stage: 1, trace, block: 2, phase: "update", fetch });
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../core/hex_float.ts";
import { type Batch, batchArrays, validateBatch } from "./batch.ts";
import { activationRoot, BLOCK_PHASES, type BlockPhase, type BlockRef, blocksOf } from "./boundary.ts";
import { configFromJson, headDim, type ModelConfig } from "./config.ts";
import { headForwardBackward } from "./head.ts";
import { type Manifest, readComponent } from "./manifest.ts";
import { fetchChecked, Mismatch, mismatchVerdict, phase, type Verdict } from "./referee.ts";
import { rotaryTables } from "./rotary.ts";
import { readValue, type Tensors, writeSafetensors } from "./safetensors.ts";
import { applyUpdate, normSquaredFrom, stageBackward, stageForward, type StepShape } from "./stage.ts";
import type { StageTrace } from "./trace.ts";

/** A pinpointed challenge's inputs. */
export interface BlockReplayInput {
  readonly parent: Manifest;
  readonly batch: Batch;
  readonly stage: number;
  readonly trace: StageTrace;
  readonly block: BlockRef;
  readonly phase: BlockPhase;
  /** The bytes sealed under a root, or undefined when nothing was sealed. */
  readonly fetch: (root: string) => Uint8Array | undefined;
}

/** Whether `block` names a block of `trace` (stage `stage`) and `phase` is a phase. */
export function validBlock(trace: StageTrace, stage: number, block: unknown, phase: unknown): boolean {
  if (!(BLOCK_PHASES as readonly unknown[]).includes(phase)) return false;
  if (block === "head") return stage === 0;
  const n = Array.isArray(trace.blocks) ? trace.blocks.length : 0;
  return Number.isSafeInteger(block) && (block as number) >= 0 && (block as number) < n;
}

/** The committed root of the activation entering block `j` (stage 0's first block reads the embedding). */
function inputOf(trace: StageTrace, stage: number, j: number): string {
  if (j > 0) return trace.blocks[j - 1]!.output;
  return stage === 0 ? trace.embedding! : trace.input;
}

/** The committed root of the gradient arriving at the output of block `j` (`-1`: the embedding's output). */
function incomingOf(trace: StageTrace, j: number): string {
  return j + 1 < trace.blocks.length ? trace.blocks[j + 1]!.gradient_in : trace.gradient_out;
}

/**
 * The sorted objects a pinpointed challenge needs sealed: a block's parent component and committed input
 * activation, plus (backward, update) the gradient arriving at its output; stage 0's head: the embedding,
 * the final norm and the final hidden state, plus (backward, update) the gradient at the embedding's output.
 * Null when `block` or `phase` do not name one of the stage's blocks.
 */
export function blockNeeded(
  parent: Manifest,
  trace: StageTrace,
  stage: number,
  block: unknown,
  phase: unknown,
): string[] | null {
  if (!validBlock(trace, stage, block, phase)) return null;
  const roots: string[] = [];
  if (block === "head") {
    roots.push(parent.components.embed!, parent.components.norm!, trace.head_input!);
    if (phase !== "forward") roots.push(incomingOf(trace, -1));
  } else {
    const j = block as number;
    roots.push(parent.components[blocksOf(trace.partition)[j]!]!, inputOf(trace, stage, j));
    if (phase !== "forward") roots.push(incomingOf(trace, j));
  }
  return [...new Set(roots)].sort();
}

/** The batch arrays, rotary tables and activation shape a replay shares (a malformed batch is `invalid_record`). */
export function replayShape(parent: Manifest, batch: Batch): {
  config: ModelConfig;
  shape: StepShape;
  labels: Int32Array;
  act: number[];
} {
  const config = configFromJson(parent.config);
  const b = validateBatch(batch as unknown as JsonValue, config);
  const { B, T, ids, labels } = batchArrays(b);
  const shape = { config, B, T, ids, tables: rotaryTables(T, headDim(config), config.rope_theta) };
  return { config, shape, labels, act: [B, T, config.hidden_size] };
}

/** Replays the named block (see the module comment). */
export function replayBlock(input: BlockReplayInput): Verdict {
  try {
    if (!validBlock(input.trace, input.stage, input.block, input.phase)) {
      throw new ProtocolError(
        "invalid_challenge",
        `Cannot replay: block ${JSON.stringify(input.block)} phase ${
          JSON.stringify(input.phase)
        } of stage ${input.stage}`,
      );
    }
    if (input.block === "head") replayHead(input);
    else replayOne(input, input.block);
    return { verdict: "match" };
  } catch (e) {
    if (e instanceof Mismatch) return mismatchVerdict(e, input.block);
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

function differs(what: string, got: string, committed: string): ProtocolError {
  return new ProtocolError("invalid_record", `Cannot replay: ${what} is ${got}, committed ${committed}`);
}

function replayOne(input: BlockReplayInput, j: number): void {
  const { trace, stage } = input;
  const name = blocksOf(trace.partition)[j]!;
  const committed = trace.blocks[j]!;
  const { shape, act, components, x } = phase("forward output", () => {
    const s = replayShape(input.parent, input.batch);
    const bytes = fetchChecked(input, input.parent.components[name], `component ${name}`);
    const components = { [name]: readComponent(s.config, name, bytes) };
    const x = readValue(fetchChecked(input, inputOf(trace, stage, j), `input of ${name}`), s.act).data;
    return { ...s, components, x };
  }, "forward");
  const f = phase("forward output", () => {
    const f = stageForward(shape, [name], components, x);
    const root = activationRoot(act, f.output);
    if (root !== committed.output) throw differs(`${name} output`, root, committed.output);
    return f;
  }, "forward");
  if (input.phase === "forward") return;
  const r = phase("input gradient", () => {
    const g = readValue(fetchChecked(input, incomingOf(trace, j), `gradient at ${name}'s output`), act).data;
    const r = stageBackward(shape, [name], components, f, g, null);
    const root = activationRoot(act, r.gradientIn!);
    if (root !== committed.gradient_in) throw differs(`${name} input gradient`, root, committed.gradient_in);
    return r;
  }, "backward");
  const grads = phase("gradient norm", () => {
    const previous = j > 0
      ? trace.blocks[j - 1]!.norm_squared
      : stage === 0
      ? trace.head_norm_squared!
      : null;
    const norm = toHexFloat(normSquaredFrom(previous === null ? 0 : fromHexFloat(previous), [name], r.grads));
    if (norm !== committed.norm_squared) {
      throw differs(`${name} running squared norm`, norm, committed.norm_squared);
    }
    return r.grads;
  }, "backward");
  if (input.phase === "backward") return;
  phase("optimizer update", () => {
    update(trace, [name], components, grads, { [name]: committed.component });
  }, "update");
}

function replayHead(input: BlockReplayInput): void {
  const { trace } = input;
  const names = ["embed", "norm"];
  const { config, shape, labels, act, components, hidden } = phase("forward output", () => {
    const s = replayShape(input.parent, input.batch);
    const components: Record<string, Tensors> = {};
    for (const n of names) {
      components[n] = readComponent(
        s.config,
        n,
        fetchChecked(input, input.parent.components[n], `component ${n}`),
      );
    }
    const hidden = readValue(fetchChecked(input, trace.head_input, "head input"), s.act).data;
    return { ...s, components, hidden };
  }, "forward");
  const f = phase("forward output", () => {
    const f = stageForward(shape, names, components, null);
    const root = activationRoot(act, f.output);
    if (root !== trace.embedding) throw differs("embedding output", root, trace.embedding!);
    return f;
  }, "forward");
  const head = phase("head loss", () => {
    const r = headForwardBackward(
      hidden,
      labels,
      components.norm!,
      components.embed!,
      config,
      shape.B * shape.T,
    );
    if (toHexFloat(r.loss) !== trace.loss) throw differs("loss", toHexFloat(r.loss), trace.loss!);
    return r;
  }, "forward");
  phase("head gradient", () => {
    const root = activationRoot(act, head.dHidden);
    if (root !== trace.head_gradient) throw differs("head gradient", root, trace.head_gradient!);
  }, "forward");
  if (input.phase === "forward") return;
  const grads = phase("gradient norm", () => {
    const g =
      readValue(fetchChecked(input, incomingOf(trace, -1), "gradient at the embedding's output"), act).data;
    const r = stageBackward(shape, names, components, f, g, head);
    const norm = toHexFloat(normSquaredFrom(0, names, r.grads));
    if (norm !== trace.head_norm_squared) {
      throw differs("head running squared norm", norm, trace.head_norm_squared!);
    }
    return r.grads;
  }, "backward");
  if (input.phase === "backward") return;
  phase("optimizer update", () => {
    update(trace, names, components, grads, trace.components);
  }, "update");
}

function update(
  trace: StageTrace,
  names: readonly string[],
  components: Record<string, Tensors>,
  grads: Record<string, Tensors>,
  committed: Readonly<Record<string, string>>,
): void {
  const updated = applyUpdate(
    names,
    components,
    grads,
    fromHexFloat(trace.learning_rate),
    fromHexFloat(trace.scale),
  );
  for (const n of names) {
    const root = sha256Hex(writeSafetensors(updated[n]!));
    if (root !== committed[n]) throw differs(`${n} update`, root, committed[n]!);
  }
}
