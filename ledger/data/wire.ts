/**
 * The wire contract of data admission (PROTOCOL §6, §13): the body fields of `propose_data` and `vote_data`
 * and the answers of the data query paths. Actors build what they send with these; the ledger checks what it
 * receives against them.
 *
 * | kind | fields |
 * |---|---|
 * | `propose_data` | `data_root` (id of the cohort document), `metadata` (`cohortMetadata` of `document.ts`) |
 * | `vote_data` | `proposal_id` (txid of the `propose_data`), `approve` (boolean) |
 *
 * @example
 * ```ts
 * import { proposeFields, voteFields } from "./wire.ts";
 * const fields = proposeFields(document, batches); // {data_root, metadata}
 * voteFields(proposalId, true); // {proposal_id, approve: true}
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { ScheduledBatch } from "../../workflows/cohort.ts";
import { type CohortDocument, cohortMetadata } from "./document.ts";
import type { CohortStatus } from "./store.ts";

/** The body fields of each data transaction kind, besides `kind`, `chain_id` and `nonce`. */
export const DATA_TX_FIELDS = {
  propose_data: ["data_root", "metadata"],
  vote_data: ["proposal_id", "approve"],
} as const;

/** A data transaction kind. */
export type DataTxKind = keyof typeof DATA_TX_FIELDS;

/** `propose_data` fields for a document and the batches it names. */
export function proposeFields(document: CohortDocument, batches: readonly Batch[]): JsonObject {
  return { data_root: id(document), metadata: cohortMetadata(document, batches) };
}

/** `vote_data` fields. */
export function voteFields(proposalId: string, approve: boolean): JsonObject {
  return { proposal_id: proposalId, approve };
}

/** An activated cohort as queries show it; `position` is the next schedule step (= steps settled). */
export interface CohortAnswer extends JsonObject {
  data_root: string;
  proposal: string;
  status: CohortStatus;
  activated: number;
  deadline: number;
  ended: number | null;
  position: number;
  steps: number;
  schedule: (ScheduledBatch & JsonObject)[];
}

/**
 * The `data` part of `GET /lifecycle` (null on a chain without a data lifecycle): the data root, each source's
 * cursor, the retention and fresh documents every cohort carries, the pending proposal id and the latest cohort.
 */
export interface DataLifecycleAnswer extends JsonObject {
  data_root: string;
  cursors: Record<string, number>;
  /** Retention and fresh documents per cohort (genesis `data.evaluation_documents`, 32 when absent). */
  evaluation_documents: number;
  proposal: string | null;
  cohort: CohortAnswer | null;
}

/** `GET /data[?root=]`: an activated cohort (default the latest) and its scheduled batches' JSON in schedule order. */
export interface DataAnswer extends CohortAnswer {
  batches: JsonValue[];
}

/**
 * `GET /data/proposal[?id=]`: a proposal (default the pending one) with its cohort machine state
 * (`workflows/cohort.ts`: status, electorate, votes, bond, proposed, expires, schedule once activated) and its
 * document.
 */
export interface ProposalAnswer extends JsonObject {
  proposal_id: string;
  state: JsonObject;
  document: JsonObject;
}

/**
 * `GET /data/consumed?document=<id>` | `?batch=<root>` | `?source=<name>&row=<n>`: whether an activated cohort
 * consumed it, and which (its data root). A malformed query is 404.
 */
export interface ConsumedAnswer extends JsonObject {
  consumed: boolean;
  data_root: string | null;
}

/** The data query paths; unknown roots or ids answer 404 `not_found`. `/batch?root=` also serves cohort batches. */
export const DATA_QUERY_PATHS = [
  "/data",
  "/data?root=",
  "/data/proposal",
  "/data/proposal?id=",
  "/data/consumed?document=",
  "/data/consumed?batch=",
  "/data/consumed?source=&row=",
] as const;
