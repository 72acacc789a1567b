/**
 * The referee (PROTOCOL §10.5): recompute one stage from its inputs and compare its block-boundary commitments
 * in order — each block's forward output (stage 0: the embedding's first); on stage 0 the loss and head
 * gradient; each block's input gradient from the last block down, then the running squared norms; each
 * component's SGD update. The first difference names what was forged, the block (an index among the stage's
 * blocks, or `"head"` for stage 0's embed and norm) and the phase a pinpointed challenge must name
 * (`block_referee.ts` replays that one block on chain). The checks are named `forward output`, `head loss`,
 * `head gradient`, `input gradient`, `gradient norm` and `optimizer update`. Inputs that are missing, do not hash to their
 * root or do not parse are a mismatch of the phase that needed them. Anything that is not a protocol error
 * (running out of memory, a crash) is reported as `error` and must never decide a dispute.
 *
 * @example
 * ```ts
 * import { replayStage } from "./referee.ts";
 * // const v = replayStage({ parent, batch, stage: 1, trace, fetch: (root) => sealed.get(root) });
 * // v.verdict === "mismatch" && v.what === "input gradient"
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../core/hex_float.ts";
import { type Batch, batchArrays, validateBatch } from "./batch.ts";
import { activationRoot, type BlockPhase, type BlockRef, blocksOf, BoundaryRoots } from "./boundary.ts";
import { configFromJson, headDim } from "./config.ts";
import { growManifest } from "./growth.ts";
import { headForwardBackward, type HeadResult } from "./head.ts";
import { type Manifest, readComponent } from "./manifest.ts";
import { rotaryTables } from "./rotary.ts";
import { readValue, type Tensors, writeSafetensors } from "./safetensors.ts";
import { applyUpdate, normSquared, normSquaredFrom, stageBackward, stageForward } from "./stage.ts";
import type { StageTrace } from "./trace.ts";

/**
 * The check a mismatch names, in the order a stage's checks run; a growth names `growth`; a generation's head
 * names `generated token` (kernels/generation_referee.ts), a score's head `window loss` then `next-token argmax`
 * (kernels/score_referee.ts); a `chunks` challenge names `chunk root` (a committed chunk root that is not the
 * tree of the object's bytes).
 */
export type Forgery =
  | "forward output"
  | "head loss"
  | "head gradient"
  | "input gradient"
  | "gradient norm"
  | "optimizer update"
  | "generated token"
  | "window loss"
  | "next-token argmax"
  | "growth"
  | "chunk root";

/** The referee's answer. */
export type Verdict =
  | { readonly verdict: "match" }
  | {
    readonly verdict: "mismatch";
    readonly what: Forgery;
    readonly message: string;
    /** The block found forged (stage replays and pinpointed replays), and the phase it was found in. */
    readonly block?: BlockRef;
    readonly phase?: BlockPhase;
  }
  | { readonly verdict: "error"; readonly message: string };

/** The sealed inputs of one stage. */
export interface ReplayInput {
  readonly parent: Manifest;
  readonly batch: Batch;
  readonly stage: number;
  readonly trace: StageTrace;
  /** The bytes sealed under a root, or undefined when nothing was sealed. */
  readonly fetch: (root: string) => Uint8Array | undefined;
  /** Receives every block-boundary file the replay computes, with its root (what a challenger uploads). */
  readonly keep?: (root: string, bytes: Uint8Array) => void;
}

/** A mismatch found while replaying: what was forged and how it differs. */
export class Mismatch extends Error {
  constructor(
    readonly what: Forgery,
    message: string,
    readonly phase?: BlockPhase,
    readonly block?: BlockRef,
  ) {
    super(message);
  }
}

/**
 * Runs `fn`; a protocol error inside it (malformed input, non-finite value) becomes a mismatch of `what`
 * (in `blockPhase`, when the replay is of a training stage or block).
 */
export function phase<T>(what: Forgery, fn: () => T, blockPhase?: BlockPhase): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ProtocolError) throw new Mismatch(what, `${e.code}: ${e.message}`, blockPhase);
    throw e;
  }
}

/** A mismatch as a verdict, with its block and phase when known. */
export function mismatchVerdict(e: Mismatch, block?: BlockRef): Verdict {
  const b = e.block ?? block;
  return {
    verdict: "mismatch",
    what: e.what,
    message: e.message,
    ...(b === undefined ? {} : { block: b }),
    ...(e.phase === undefined ? {} : { phase: e.phase }),
  };
}

/** The sealed bytes of `root`, checked against it; `not_sealed` or `seal_mismatch` otherwise. */
export function fetchChecked(
  input: { readonly fetch: (root: string) => Uint8Array | undefined },
  root: unknown,
  what: string,
): Uint8Array {
  const bytes = typeof root === "string" ? input.fetch(root) : undefined;
  if (!bytes) throw new ProtocolError("not_sealed", `Cannot replay: ${what} ${root} is not sealed`);
  if (sha256Hex(bytes) !== root) {
    throw new ProtocolError("seal_mismatch", `Cannot replay: ${what} does not hash to ${root}`);
  }
  return bytes;
}

/** Recomputes one stage and compares it with its trace (see the module comment). */
export function replayStage(input: ReplayInput): Verdict {
  try {
    replay(input);
    return { verdict: "match" };
  } catch (e) {
    if (e instanceof Mismatch) return mismatchVerdict(e);
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

function replay(input: ReplayInput): void {
  const { trace, stage } = input;
  const head0 = stage === 0;
  const { config: c, partition, components, shape, labels, act } = phase("forward output", () => {
    const config = configFromJson(input.parent.config);
    const batch = validateBatch(input.batch as unknown as JsonValue, config);
    if (head0 && trace.input !== id(batch as unknown as JsonValue)) {
      throw new ProtocolError("invalid_record", "Cannot replay: stage 0 input is not the batch");
    }
    const partition = trace.partition;
    if (!Array.isArray(partition) || (partition[0] === "embed") !== head0) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: partition ${JSON.stringify(partition)} of stage ${stage}`,
      );
    }
    const components: Record<string, Tensors> = {};
    for (const name of partition) {
      const root = input.parent.components[name];
      components[name] = readComponent(config, name, fetchChecked(input, root, `component ${name}`));
    }
    const { B, T, ids, labels } = batchArrays(batch);
    const shape = { config, B, T, ids, tables: rotaryTables(T, headDim(config), config.rope_theta) };
    return { config, partition, components, shape, labels, act: [B, T, config.hidden_size] };
  }, "forward");
  const N = shape.B * shape.T;
  const names = blocksOf(partition);
  const blocks = trace.blocks;
  const bounds = new BoundaryRoots(act, input.keep ? { keep: input.keep } : {});
  const differ = (what: Forgery, p: BlockPhase, block: BlockRef, message: string) =>
    new Mismatch(what, `invalid_record: Cannot replay: ${message}`, p, block);
  const lastUnit: BlockRef = names.length > 0 ? names.length - 1 : "head";

  // Forward, in block order: the first block whose output differs (its input, the one before's, matched).
  const forward = phase("forward output", () => {
    const x = head0 ? null : readValue(fetchChecked(input, trace.input, "input activation"), act).data;
    return stageForward(shape, partition, components, x, bounds.onOutput);
  }, "forward");
  const fwd = bounds.forward(partition);
  if (head0 && fwd.embedding !== trace.embedding) {
    throw differ(
      "forward output",
      "forward",
      "head",
      `embedding is ${fwd.embedding}, committed ${trace.embedding}`,
    );
  }
  for (let j = 0; j < names.length; j++) {
    if (fwd.outputs[j] !== blocks[j]!.output) {
      throw differ(
        "forward output",
        "forward",
        j,
        `${names[j]} output is ${fwd.outputs[j]}, committed ${blocks[j]!.output}`,
      );
    }
  }
  // The stage's own values are its boundaries' (the claim checks them); a trace that was not checked is
  // still named at its last block.
  const outRoot = names.length > 0 ? fwd.outputs.at(-1) : fwd.embedding;
  if (outRoot !== trace.output) {
    throw differ("forward output", "forward", lastUnit, `output is ${outRoot}, committed ${trace.output}`);
  }

  let head: HeadResult | null = null;
  if (head0) {
    head = phase("head loss", () => {
      const h = readValue(fetchChecked(input, trace.head_input, "head input"), act).data;
      return headForwardBackward(h, labels, components.norm!, components.embed!, c, N);
    }, "forward");
    if (toHexFloat(head.loss) !== trace.loss) {
      throw differ(
        "head loss",
        "forward",
        "head",
        `loss is ${toHexFloat(head.loss)}, committed ${trace.loss}`,
      );
    }
    const root = activationRoot(act, head.dHidden);
    if (root !== trace.head_gradient) {
      throw differ(
        "head gradient",
        "forward",
        "head",
        `head gradient is ${root}, committed ${trace.head_gradient}`,
      );
    }
  }

  // Backward, from the last block down: the first block whose input gradient differs (its incoming one matched);
  // then the running sums, each continued from the committed one before it.
  const grads = phase("input gradient", () => {
    const g = readValue(fetchChecked(input, trace.gradient_out, "output gradient"), act).data;
    return stageBackward(shape, partition, components, forward, g, head, { onGradient: bounds.onGradient })
      .grads;
  }, "backward");
  for (let j = names.length - 1; j >= 0; j--) {
    const root = bounds.gradients.get(names[j]!);
    if (root !== blocks[j]!.gradient_in) {
      throw differ(
        "input gradient",
        "backward",
        j,
        `${names[j]} input gradient is ${root}, committed ${blocks[j]!.gradient_in}`,
      );
    }
  }
  let previous = 0;
  if (head0) {
    const norm = toHexFloat(normSquaredFrom(0, ["embed", "norm"], grads));
    if (norm !== trace.head_norm_squared) {
      throw differ(
        "gradient norm",
        "backward",
        "head",
        `head running squared norm is ${norm}, committed ${trace.head_norm_squared}`,
      );
    }
    previous = fromHexFloat(trace.head_norm_squared!);
  }
  for (let j = 0; j < names.length; j++) {
    const norm = toHexFloat(normSquaredFrom(previous, [names[j]!], grads));
    if (norm !== blocks[j]!.norm_squared) {
      throw differ(
        "gradient norm",
        "backward",
        j,
        `${names[j]} running squared norm is ${norm}, committed ${blocks[j]!.norm_squared}`,
      );
    }
    previous = fromHexFloat(blocks[j]!.norm_squared);
  }
  const firstGradient = head0 ? null : bounds.gradients.get(names[0]!) ?? null;
  if (firstGradient !== trace.gradient_in) {
    throw differ(
      "input gradient",
      "backward",
      0,
      `input gradient is ${firstGradient}, committed ${trace.gradient_in}`,
    );
  }
  const total = toHexFloat(normSquared(partition, grads));
  if (total !== trace.norm_squared) {
    throw differ(
      "gradient norm",
      "backward",
      lastUnit,
      `squared norm is ${total}, committed ${trace.norm_squared}`,
    );
  }

  // Update, in partition order: stage 0's head (embed, norm) first, then each block.
  const updated = phase("optimizer update", () => {
    const lr = fromHexFloat(trace.learning_rate), scale = fromHexFloat(trace.scale);
    return applyUpdate(partition, components, grads, lr, scale);
  }, "update");
  for (const name of partition) {
    const root = sha256Hex(writeSafetensors(updated[name]!));
    if (root !== trace.components?.[name]) {
      const j = names.indexOf(name);
      throw differ(
        "optimizer update",
        "update",
        j < 0 ? "head" : j,
        `${name} updates to ${root}, committed ${trace.components?.[name]}`,
      );
    }
  }
}

/**
 * The referee of a growth (PROTOCOL §5.3): recompute the grown manifest from the parent and the bytes of
 * its last block alone and compare its root with the claimed one. A missing or wrong last block, or a bad
 * count, is a mismatch named `growth` (what was forged is the growth itself, not an optimizer step).
 */
export function replayGrowth(
  parent: Manifest,
  parentRoot: string,
  lastBlock: Uint8Array | undefined,
  added: number,
  claimedRoot: string,
): Verdict {
  try {
    const grown = phase("growth", () => {
      if (!lastBlock) {
        throw new ProtocolError("not_sealed", "Cannot replay growth: the last block is not sealed");
      }
      return growManifest(parent, parentRoot, lastBlock, added);
    });
    if (grown.root !== claimedRoot) {
      return {
        verdict: "mismatch",
        what: "growth",
        message: `grown manifest is ${grown.root}, claimed ${claimedRoot}`,
      };
    }
    return { verdict: "match" };
  } catch (e) {
    if (e instanceof Mismatch) return mismatchVerdict(e);
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}
