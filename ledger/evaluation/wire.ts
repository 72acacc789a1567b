/**
 * The wire contract of evaluation (PROTOCOL §7, §13): the exact body fields of `open_evaluation`, `score` and
 * `finish_evaluation`, and a score's metadata. The evaluator builds what it sends with these; the ledger
 * checks what it receives against them.
 *
 * | kind | fields |
 * |---|---|
 * | `open_evaluation` | none: it binds the latest trained cohort, the serving root and the learning root |
 * | `score` | `evaluation_id` (the `open_evaluation` txid), `side` (baseline \| candidate), `role` (retention \| fresh), `offset` (the group's settled window count, a multiple of 4), `record_root` (id of the score record), `metadata` (ScoreMetadata) |
 * | `finish_evaluation` | `evaluation_id` |
 *
 * A score's claim id is the txid of its `score`. Disputes use `challenge`, `upload`, `seal` and `resolve`
 * with that claim id: stages 0 … S−1 are the record's partitions, stage S its head.
 *
 * @example
 * ```ts
 * import { scoreMetadata } from "./wire.ts";
 * // const metadata = scoreMetadata(proof); // { [id(record)]: record, [id(trace)]: trace …, [id(head)]: head }
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import type { ScoreProof } from "../../kernels/score_record.ts";
import { keyedById } from "../training/wire.ts";

/** The body fields of each evaluation transaction kind, besides `kind`, `chain_id` and `nonce`. */
export const EVALUATION_TX_FIELDS = {
  open_evaluation: [],
  score: ["evaluation_id", "side", "role", "offset", "record_root", "metadata"],
  finish_evaluation: ["evaluation_id"],
} as const;

/** The two sides and two roles, in the order the groups are reported. */
export const SIDES = ["baseline", "candidate"] as const;
export const ROLES = ["retention", "fresh"] as const;

/** `score` fields. */
export interface ScoreFields extends JsonObject {
  evaluation_id: string;
  side: typeof SIDES[number];
  role: typeof ROLES[number];
  offset: number;
  record_root: string;
  metadata: JsonObject;
}

/** The metadata of a score: the record, each partition trace and the head trace, each under its id. */
export function scoreMetadata(proof: ScoreProof): JsonObject {
  return keyedById([
    proof.record as unknown as JsonValue,
    ...(proof.traces as unknown as JsonValue[]),
    proof.head as unknown as JsonValue,
  ]);
}
