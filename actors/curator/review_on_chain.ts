/**
 * Reviewing a proposal the chain holds: fetch it and the node's data facts, ask which of its ids and batch
 * roots were consumed, and run `reviewProposal` with the reviewer's own files and codec. Read-only; the
 * Curator's `review` command and the validator's auto-review both call it.
 *
 * @example
 * ```ts
 * import { reviewOnChain } from "./review_on_chain.ts";
 * const report = await reviewOnChain({ chain, config, codec, reader }, proposalId);
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";
import type { TextCodec } from "../../text/codec.ts";
import type { CuratorChain } from "./chain_data.ts";
import type { SourcesConfig } from "./config.ts";
import { consumedIndex } from "./consumed.ts";
import type { SourceReader } from "./reader.ts";
import { reviewProposal, type ReviewReport } from "./review.ts";

/** What a review on the chain uses. */
export interface Reviewer {
  readonly chain: CuratorChain;
  readonly config: SourcesConfig;
  /** The codec for a root (the node's pinned one). */
  readonly codec: (root: string) => Promise<TextCodec>;
  readonly reader: SourceReader;
}

/** Reviews proposal `proposalId`; `not_found` when the chain does not know it. */
export async function reviewOnChain(r: Reviewer, proposalId: string): Promise<ReviewReport> {
  const proposal = await r.chain.proposal(proposalId);
  if (proposal === null) {
    throw new ProtocolError("not_found", `Cannot review proposal ${proposalId}: the chain does not know it`);
  }
  const facts = await r.chain.facts();
  const entries = (Array.isArray(proposal.document.documents) ? proposal.document.documents : []) as {
    id: string;
    batches: string[];
  }[];
  const consumed = await r.chain.consumedAmong(
    entries.map((e) => e.id),
    entries.flatMap((e) => Array.isArray(e.batches) ? e.batches : []),
  );
  return await reviewProposal({
    proposal,
    facts,
    consumed: consumedIndex(consumed),
    sources: r.config.sources,
    windows: r.config.windows,
    codec: await r.codec(facts.tokenizer_root),
    read: (source, row) => r.reader.row(source, row),
  });
}
