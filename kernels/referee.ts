/**
 * The referee (PROTOCOL §10.5): recompute one stage from its sealed inputs and compare the committed values in
 * order — forward output; on stage 0 the head loss, then the head gradient; the input gradient, then the
 * squared gradient norm; the SGD update. The first difference names the check that failed. Inputs that are missing, do not hash to their
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
import { configFromJson, headDim } from "./config.ts";
import { growManifest } from "./growth.ts";
import { headForwardBackward, type HeadResult } from "./head.ts";
import { type Manifest, readComponent } from "./manifest.ts";
import { rotaryTables } from "./rotary.ts";
import { readValue, type Tensors, writeSafetensors, writeValue } from "./safetensors.ts";
import { applyUpdate, normSquared, stageBackward, stageForward } from "./stage.ts";
import type { StageTrace } from "./trace.ts";

/**
 * The check a mismatch names, in the order a stage's checks run; a growth names `growth`; a generation's head
 * names `generated token` (kernels/generation_referee.ts), a score's head `window loss` then `next-token argmax`
 * (kernels/score_referee.ts).
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
  | "growth";

/** The referee's answer. */
export type Verdict =
  | { readonly verdict: "match" }
  | { readonly verdict: "mismatch"; readonly what: Forgery; readonly message: string }
  | { readonly verdict: "error"; readonly message: string };

/** The sealed inputs of one stage. */
export interface ReplayInput {
  readonly parent: Manifest;
  readonly batch: Batch;
  readonly stage: number;
  readonly trace: StageTrace;
  /** The bytes sealed under a root, or undefined when nothing was sealed. */
  readonly fetch: (root: string) => Uint8Array | undefined;
}

/** A mismatch found while replaying: what was forged and how it differs. */
export class Mismatch extends Error {
  constructor(readonly what: Forgery, message: string) {
    super(message);
  }
}

/** Runs `fn`; a protocol error inside it (malformed input, non-finite value) becomes a mismatch of `what`. */
export function phase<T>(what: Forgery, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof ProtocolError) throw new Mismatch(what, `${e.code}: ${e.message}`);
    throw e;
  }
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
    if (e instanceof Mismatch) return { verdict: "mismatch", what: e.what, message: e.message };
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
  });
  const N = shape.B * shape.T;

  const forward = phase("forward output", () => {
    const x = head0 ? null : readValue(fetchChecked(input, trace.input, "input activation"), act).data;
    const f = stageForward(shape, partition, components, x);
    const root = sha256Hex(writeValue({ shape: act, data: f.output }));
    if (root !== trace.output) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: output is ${root}, committed ${trace.output}`,
      );
    }
    return f;
  });

  let head: HeadResult | null = null;
  if (head0) {
    head = phase("head loss", () => {
      const h = readValue(fetchChecked(input, trace.head_input, "head input"), act).data;
      const r = headForwardBackward(h, labels, components.norm!, components.embed!, c, N);
      if (toHexFloat(r.loss) !== trace.loss) {
        throw new ProtocolError(
          "invalid_record",
          `Cannot replay: loss is ${toHexFloat(r.loss)}, committed ${trace.loss}`,
        );
      }
      return r;
    });
    phase("head gradient", () => {
      const root = sha256Hex(writeValue({ shape: act, data: head!.dHidden }));
      if (root !== trace.head_gradient) {
        throw new ProtocolError(
          "invalid_record",
          `Cannot replay: head gradient is ${root}, committed ${trace.head_gradient}`,
        );
      }
    });
  }

  const backward = phase("input gradient", () => {
    const g = readValue(fetchChecked(input, trace.gradient_out, "output gradient"), act).data;
    const r = stageBackward(shape, partition, components, forward, g, head);
    const root = r.gradientIn ? sha256Hex(writeValue({ shape: act, data: r.gradientIn })) : null;
    if (root !== trace.gradient_in) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: input gradient is ${root}, committed ${trace.gradient_in}`,
      );
    }
    return r;
  });
  const grads = phase("gradient norm", () => {
    const norm = toHexFloat(normSquared(partition, backward.grads));
    if (norm !== trace.norm_squared) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: squared norm is ${norm}, committed ${trace.norm_squared}`,
      );
    }
    return backward.grads;
  });

  phase("optimizer update", () => {
    const lr = fromHexFloat(trace.learning_rate), scale = fromHexFloat(trace.scale);
    const updated = applyUpdate(partition, components, grads, lr, scale);
    for (const name of partition) {
      const root = sha256Hex(writeSafetensors(updated[name]!));
      if (root !== trace.components?.[name]) {
        throw new ProtocolError(
          "invalid_record",
          `Cannot replay: ${name} updates to ${root}, committed ${trace.components?.[name]}`,
        );
      }
    }
  });
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
    if (e instanceof Mismatch) return { verdict: "mismatch", what: e.what, message: e.message };
    return { verdict: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}
