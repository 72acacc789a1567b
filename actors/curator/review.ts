/**
 * Reviewing a proposal from the reviewer's own copy of the raw files (PROTOCOL §6): the document is checked
 * by rebuilding every document from the reviewer's file: the row's id and raw
 * object, its role from its source and id, every window's batch root and the omitted targets, and no two
 * documents of the cohort may be near duplicates; then, while the proposal is pending, the ledger's own rules (`checkCohortDocument`:
 * cursors, consumption, counts, codec root, batch shapes) run against the reviewer's node with the rebuilt
 * batches. The verdict is `approve` only when nothing is wrong; every
 * reason names the document (id, source and row) it is about, or `null` for the cohort as a whole.
 *
 * @example
 * ```ts
 * import { reviewProposal } from "./review.ts";
 * const report = await reviewProposal({ proposal, facts, consumed, sources, windows, codec, read });
 * report.verdict; // "approve" | "reject"
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { checkCohortDocument, type CohortEntry, type ConsumedIndex } from "../../ledger/data/document.ts";
import { allowedRoles } from "../../ledger/data/source.ts";
import type { TextCodec } from "../../text/codec.ts";
import { isNearDuplicate } from "../../text/hygiene.ts";
import { rowDocument } from "../../text/sources/document.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import type { WindowOptions } from "../../text/windows.ts";
import type { ChainFacts, ProposalView } from "./chain_data.ts";
import type { CuratorSource } from "./config.ts";
import { documentBatches } from "./windows.ts";

/** One thing wrong with a proposal. */
export interface ReviewReason extends JsonObject {
  /** The document's id, or null for the cohort as a whole. */
  document: string | null;
  source: string | null;
  row: number | null;
  code: string;
  message: string;
}

/** A review report. */
export interface ReviewReport extends JsonObject {
  proposal: string;
  data_root: string;
  /** The proposal's status on the reviewer's node when reviewed (`proposed`, `voting`, `activated`, `expired`). */
  status: string;
  verdict: "approve" | "reject";
  documents: number;
  batches: number;
  reasons: ReviewReason[];
}

/** What a review needs. */
export interface ReviewInput {
  readonly proposal: ProposalView;
  /** The reviewer's node's facts and consumed index. */
  readonly facts: ChainFacts;
  readonly consumed: ConsumedIndex;
  readonly sources: readonly CuratorSource[];
  readonly windows: WindowOptions;
  readonly codec: TextCodec;
  /** Reads row `row` of the reviewer's copy of `source` (SHA-256 checked on open). */
  readonly read: (source: CuratorSource, row: number) => Promise<ChatMessage[]>;
}

/** Reviews a proposal; never throws for a bad proposal, only for the reviewer's own failures. */
export async function reviewProposal(input: ReviewInput): Promise<ReviewReport> {
  const { proposal, facts, codec } = input;
  const reasons: ReviewReason[] = [];
  const cohortWide = (code: string, message: string) =>
    reasons.push({ document: null, source: null, row: null, code, message });
  if (codec.root !== facts.tokenizer_root) {
    cohortWide(
      "codec_mismatch",
      `the node pins codec ${facts.tokenizer_root}, the reviewer has ${codec.root}`,
    );
  }
  if (id(proposal.document) !== proposal.data_root) {
    cohortWide(
      "invalid_proposal",
      `the document's id is ${id(proposal.document)}, the proposal says ${proposal.data_root}`,
    );
  }
  const entries = Array.isArray(proposal.document.documents)
    ? (proposal.document.documents as CohortEntry[])
    : [];
  // Every document rebuilt from the reviewer's own file; the batches by root, as the reviewer makes them.
  const rebuilt = new Map<string, JsonValue>();
  const seen: { id: string; simhash: string }[] = [];
  let batches = 0;
  for (const entry of entries) {
    const problem = (code: string, message: string) =>
      reasons.push({ document: entry.id, source: entry.source, row: entry.row, code, message });
    const source = input.sources.find((s) => s.spec.name === entry.source);
    if (source === undefined) {
      problem("unknown_source", `document ${entry.id}: the reviewer pins no source ${entry.source}`);
      continue;
    }
    let messages: ChatMessage[];
    try {
      messages = await input.read(source, entry.row);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      problem(
        e.code,
        `document ${entry.id}: the reviewer cannot read ${entry.source} row ${entry.row}: ${e.message}`,
      );
      continue;
    }
    const raw = rowDocument(messages);
    if (raw.id !== entry.id) {
      problem("document_mismatch", `document ${entry.id}: ${entry.source} row ${entry.row} has id ${raw.id}`);
      continue;
    }
    if (raw.object !== entry.object) {
      problem(
        "document_mismatch",
        `document ${entry.id}: its object is ${entry.object}, the row's is ${raw.object}`,
      );
    }
    if (!allowedRoles(source.spec.role, entry.id).includes(entry.role)) {
      problem("relabelled_heldout", `document ${entry.id} is labelled ${entry.role}`);
    }
    const near = seen.find((s) => isNearDuplicate(s.simhash, raw.simhash));
    if (near) problem("near_duplicate", `document ${entry.id} is a near duplicate of ${near.id}`);
    seen.push({ id: entry.id, simhash: raw.simhash });
    let cut;
    try {
      cut = documentBatches(codec, messages, input.windows, entry.role !== "train");
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      problem(e.code, `document ${entry.id}: ${e.message}`);
      continue;
    }
    batches += cut.roots.length;
    cut.roots.forEach((r, i) => rebuilt.set(r, cut.batches[i] as unknown as JsonValue));
    const proposed = Array.isArray(entry.batches) ? entry.batches : [];
    const at = Array.from({ length: Math.max(proposed.length, cut.roots.length) }, (_, i) => i)
      .find((i) => proposed[i] !== cut.roots[i]);
    if (at !== undefined) {
      problem(
        "batch_mismatch",
        `document ${entry.id}: window ${at} does not match ${entry.source} row ${entry.row} rebuilt ` +
          `(${proposed.length} batches proposed, ${cut.roots.length} rebuilt)`,
      );
    }
    if (cut.omitted !== entry.omitted_targets) {
      problem(
        "document_mismatch",
        `document ${entry.id}: omitted_targets is ${entry.omitted_targets}, the row omits ${cut.omitted}`,
      );
    }
  }
  // The ledger's own rules against the reviewer's node, with the rebuilt batches; only while the proposal is
  // pending (once activated or expired, the node's cursors and data root are no longer the ones it was made for).
  const pending = proposal.status === "proposed" || proposal.status === "voting";
  if (pending && !reasons.some((r) => r.code === "batch_mismatch")) {
    const checked = checkCohortDocument(proposal.document, Object.fromEntries(rebuilt), {
      data_root: facts.data_root,
      tokenizer_root: codec.root,
      sources: new Map(input.sources.map((s) => [s.spec.name, s.spec])),
      cursors: facts.cursors,
      config: facts.config,
      consumed: input.consumed,
      ...(facts.evaluation_documents === undefined
        ? {}
        : { evaluation_documents: facts.evaluation_documents }),
    });
    if (!checked.ok) {
      const named = /documents\[(\d+)\]/.exec(checked.message);
      const doc = named ? entries[Number(named[1])] : undefined;
      reasons.push({
        document: doc?.id ?? null,
        source: doc?.source ?? null,
        row: doc?.row ?? null,
        code: checked.code,
        message: checked.message,
      });
    }
  }
  return {
    proposal: proposal.id,
    data_root: proposal.data_root,
    status: proposal.status,
    verdict: reasons.length === 0 ? "approve" : "reject",
    documents: entries.length,
    batches,
    reasons,
  };
}
