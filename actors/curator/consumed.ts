/**
 * A consumed index (`ledger/data/document.ts`) over a journaled `consumedAmong` answer. Positions are never
 * reported consumed: a cohort's rows start at the chain's cursors, past every consumed position.
 */
import type { ConsumedIndex } from "../../ledger/data/document.ts";
import type { ConsumedAnswer } from "./chain_data.ts";

/** The index of the ids and roots the answer lists. */
export function consumedIndex(answer: ConsumedAnswer): ConsumedIndex {
  const documents = new Set(answer.documents);
  const batches = new Set(answer.batches);
  return { document: (d) => documents.has(d), position: () => false, batch: (b) => batches.has(b) };
}
