/**
 * The wire contract of paid inference (PROTOCOL §8, §13): the exact body fields of `infer` and `respond`, the
 * response metadata, and the answers of `/inference`. The Provider and the client build what they send with
 * these; the ledger checks what it receives against them.
 *
 * | kind | fields |
 * |---|---|
 * | `infer` | `model_root` (the serving root), `provider` (account id), `prompt_ids` (2-192 ids), `max_tokens` (1-8), `max_price` (atoms), `expires_in` (blocks) |
 * | `respond` | `job_id` (the `infer` txid), `record_root` (id of the generation record), `metadata` (ResponseMetadata) |
 *
 * A response's claim id is the txid of its `respond`. Disputes use the training kinds `challenge`, `upload`,
 * `seal` and `resolve` with that claim id: stages 0 … S−1 are the record's partitions, stage S its head.
 *
 * @example
 * ```ts
 * import { responseMetadata } from "./wire.ts";
 * // const metadata = responseMetadata(proof); // { [id(record)]: record, [id(trace)]: trace …, [id(head)]: head }
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import type { GenerationProof } from "../../kernels/generation_record.ts";
import { keyedById } from "../training/wire.ts";

/** The body fields of each inference transaction kind, besides `kind`, `chain_id` and `nonce`. */
export const INFERENCE_TX_FIELDS = {
  infer: ["model_root", "provider", "prompt_ids", "max_tokens", "max_price", "expires_in"],
  respond: ["job_id", "record_root", "metadata"],
} as const;

/** `infer` fields. */
export interface InferFields extends JsonObject {
  model_root: string;
  provider: string;
  prompt_ids: number[];
  max_tokens: number;
  max_price: number;
  expires_in: number;
}

/** `respond` fields. */
export interface RespondFields extends JsonObject {
  job_id: string;
  record_root: string;
  metadata: JsonObject;
}

/** The metadata of a response: the record, each partition trace and the head trace, each under its id. */
export function responseMetadata(proof: GenerationProof): JsonObject {
  return keyedById([
    proof.record as unknown as JsonValue,
    ...(proof.traces as unknown as JsonValue[]),
    proof.head as unknown as JsonValue,
  ]);
}

/**
 * `GET /inference?id=<job id>` (a live job or a retained result): `{job_id, live, ended, escrow, claims,
 * state, metadata}` where `state` is the `workflows/inference.ts` state (`status` requested | responded |
 * settled | refuted | reopened | expired, `job`, `response`, `claim`, `moves`, `reason` when refuted).
 * `GET /inference?claim=<respond txid>` answers the same for the job that response answers.
 */
export interface JobAnswer extends JsonObject {
  job_id: string;
  live: boolean;
  ended: number | null;
  escrow: number;
  claims: string[];
  state: JsonObject;
  metadata: JsonObject | null;
}

/**
 * `GET /inference?provider=<id>` and `GET /inference`: the chain codec's EOS id (null without a codec), the terms and the
 * live jobs (of that provider), sorted by job id, each a `JobAnswer` with `metadata: null`.
 */
export interface LiveJobsAnswer extends JsonObject {
  height: number;
  eos_id: number | null;
  /** `{price_per_token, provider_bond, min_inference_blocks, max_inference_blocks, challenge_blocks, max_new_tokens}`, null on a chain without a model. */
  terms: JsonObject | null;
  jobs: JobAnswer[];
}
