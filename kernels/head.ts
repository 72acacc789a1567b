/**
 * The head on stage 0: final RMSNorm, logits = hidden·embeddingᵀ (tied), masked mean cross-entropy, and the
 * gradients of the head's input, of the final norm and of the embedding (its head part).
 *
 * @example
 * ```ts
 * import { headLogits } from "./head.ts";
 * import { initModel } from "./model.ts";
 * import { PRESETS } from "./config.ts";
 * const m = initModel(PRESETS.devnet, 1);
 * const logits = headLogits(new Float32Array(128).fill(1), m.components.norm!, m.components.embed!, m.config, 1);
 * ```
 */
import type { ModelConfig } from "./config.ts";
import { crossEntropyForwardBackward } from "./cross_entropy.ts";
import { linearBackwardByRows, linearForward, linearForwardByRows } from "./linear.ts";
import { EMBED_TENSOR, NORM_TENSOR } from "./model.ts";
import { rmsnormBackward, rmsnormForward, rmsnormOutput } from "./rmsnorm.ts";
import type { Tensors } from "./safetensors.ts";

/** hidden [N,C] → logits [N,V]. */
export function headLogits(
  hidden: Float32Array,
  norm: Tensors,
  embed: Tensors,
  c: ModelConfig,
  N: number,
): Float32Array {
  const y = rmsnormOutput(hidden, norm[NORM_TENSOR]!.data, N, c.hidden_size, c.rms_norm_eps);
  return linearForward(y, embed[EMBED_TENSOR]!.data, N, c.hidden_size, c.vocab_size); // logits: [N,V]
}

/**
 * Vocabulary rows per slice of the training head's products (`headForwardBackward`): the kernels' memory
 * then holds 4,096 rows of the embedding at a time (9 MiB for SmolLM2) instead of all of them (113 MiB, and
 * as much again for the gradient's rows). The bits do not depend on it.
 */
export const HEAD_SLICE_ROWS = 4096;

/** The loss of a batch and every gradient the head produces. */
export interface HeadResult {
  readonly loss: number; // float64 mean over labelled positions
  readonly rowLosses: Float32Array; // rowLosses: [N]
  readonly dHidden: Float32Array; // dHidden: [N,C], the head gradient sent backward
  readonly dNorm: Float32Array; // dNorm: [C]
  readonly dEmbed: Float32Array; // dEmbed: [V,C], the head's part of the tied embedding's gradient
}

/**
 * hidden [N,C], labels [N] → loss and gradients; `dEmbedOut` [V,C], when given, receives `dEmbed` (the
 * training step passes the view of the embedding's gradient file, so that gradient is never copied).
 */
export function headForwardBackward(
  hidden: Float32Array,
  labels: Int32Array,
  norm: Tensors,
  embed: Tensors,
  c: ModelConfig,
  N: number,
  dEmbedOut?: Float32Array,
): HeadResult {
  const C = c.hidden_size, V = c.vocab_size;
  const normW = norm[NORM_TENSOR]!.data, embedW = embed[EMBED_TENSOR]!.data;
  const { y, cache } = rmsnormForward(hidden, normW, N, C, c.rms_norm_eps); // y: [N,C]
  const logits = linearForwardByRows(y, embedW, N, C, V, HEAD_SLICE_ROWS); // logits: [N,V]
  const { loss, rowLosses, dz } = crossEntropyForwardBackward(logits, labels, N, V); // dz: [N,V]
  const lin = linearBackwardByRows(dz, y, embedW, N, C, V, HEAD_SLICE_ROWS, dEmbedOut);
  const nb = rmsnormBackward(lin.dx, normW, cache, N, C);
  return { loss, rowLosses, dHidden: nb.dx, dNorm: nb.dw, dEmbed: lin.dw };
}
