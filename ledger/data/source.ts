/**
 * How a pinned source (`text/sources/spec.ts`, PROTOCOL §11) supplies cohort documents (PROTOCOL §6): the
 * role a document plays is fixed by its source's role and its id, never chosen by the proposer.
 *
 * @example
 * ```ts
 * import { allowedRoles } from "./source.ts";
 * allowedRoles("train", documentId); // ["train"], or ["fresh"] for a held-out id
 * ```
 */
import type { SourceRole } from "../../text/sources/spec.ts";
import { heldOutRole } from "../../text/hygiene.ts";

export type { SourceRole, SourceSpec } from "../../text/sources/spec.ts";

/** The role a document plays in a cohort. */
export type DocumentRole = "train" | "retention" | "fresh";

/** Held-out documents per thousand, by id (PROTOCOL §11; fixed by the profile). */
export const HELDOUT_PER_MILLE = 100;

/**
 * The roles a document may have: a `train` source supplies `train` documents, except that a document whose
 * id is held out (`heldOutRole(id) === "evaluation"`) is `fresh` and never trained on; a `fresh` source
 * supplies `fresh`, a `retention` source `retention`, and a `heldout` source (evaluation only) `retention` or
 * `fresh`.
 */
export function allowedRoles(source: SourceRole, documentId: string): readonly DocumentRole[] {
  switch (source) {
    case "train":
      return heldOutRole(documentId, HELDOUT_PER_MILLE) === "evaluation" ? ["fresh"] : ["train"];
    case "fresh":
      return ["fresh"];
    case "retention":
      return ["retention"];
    case "heldout":
      return ["retention", "fresh"];
  }
}
