/**
 * The inference part of a genesis (PROTOCOL §8): paid inference runs on a chain with a model (its serving root
 * is the training section's), and its stop rule uses the EOS id of the pinned codec `codec: {root, manifest}`
 * (`manifest.special_ids.eos`). A chain without a codec stops generations only at the request's limit. The
 * price per token, the provider bond and the deadline bounds are lifecycle params (`workflows/params.ts`).
 */
import { type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { validateManifest } from "../../text/codec_manifest.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import { MAX_NEW_TOKENS } from "../../workflows/inference.ts";
import type { WorkflowParams } from "../../workflows/params.ts";
import { inferenceWriter } from "./store.ts";

/** The EOS id of a genesis `codec` field (null when the genesis pins no codec); `invalid_value` if malformed. */
export function codecEosId(codec: JsonValue): number | null {
  if (codec === null) return null;
  const manifest = (codec as { manifest?: JsonValue }).manifest;
  try {
    return validateManifest(manifest ?? null).special_ids.eos;
  } catch (e) {
    throw new ProtocolError("invalid_value", `Cannot use genesis: codec.manifest: ${(e as Error).message}`);
  }
}

/** Writes the inference facts of a chain with a model: the EOS id, the terms, no live jobs, nothing retained. */
export function initInference(
  state: LedgerWriter,
  hasModel: boolean,
  codec: JsonValue,
  params: WorkflowParams,
): void {
  if (!hasModel) return;
  const terms = {
    price_per_token: params.price_per_token,
    provider_bond: params.provider_bond,
    min_inference_blocks: params.min_inference_blocks,
    max_inference_blocks: params.max_inference_blocks,
    challenge_blocks: params.challenge_blocks,
    max_new_tokens: MAX_NEW_TOKENS,
  };
  inferenceWriter(state).setFacts({ eos_id: codecEosId(codec), terms, live: [], retained: 0 });
}
