/**
 * A document's batches as the cohort document carries them (PROTOCOL §6): every response window of the row
 * (`text/windows.ts`, with the curator's window settings) becomes a one-row batch in the kernels' form
 * `{input_ids, labels}`, where `labels[t]` is the target of position t (the window's label of position t+1,
 * the last −100). Evaluation documents must be complete (`incomplete_evaluation` otherwise).
 *
 * @example
 * ```ts
 * import { documentBatches } from "./windows.ts";
 * const { batches, omitted } = documentBatches(codec, messages, windows, false);
 * ```
 */
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { TextCodec } from "../../text/codec.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import { buildWindows, IGNORE, type WindowOptions } from "../../text/windows.ts";

/** A document's batches, their roots and its omitted targets. */
export interface DocumentBatches {
  readonly batches: Batch[];
  readonly roots: string[];
  readonly omitted: number;
}

/** Cuts `messages` into windows and makes each a one-row kernels batch. */
export function documentBatches(
  codec: TextCodec,
  messages: readonly ChatMessage[],
  options: WindowOptions,
  evaluation: boolean,
): DocumentBatches {
  const doc = buildWindows(codec, messages, options, evaluation);
  const batches = doc.windows.map((w): Batch => ({
    input_ids: [[...w.tokens]],
    labels: [[...w.labels.slice(1), IGNORE]],
  }));
  return { batches, roots: batches.map((b) => id(b as unknown as JsonValue)), omitted: doc.omitted };
}
