/**
 * Data admission benchmark: `checkCohortProposal` on the largest cohort the document format allows (32
 * retention, 32 fresh and 128 train documents, one batch each), against its peer in the same run, hashing the
 * proposal's metadata once (`id` of every value, which the check must do anyway). Target: the whole check
 * costs at most 3× that hashing, so every validator admits a proposal in about the time it takes to read it.
 *
 * Run: `deno bench -A bench/data_bench.ts`.
 */
import { id } from "../core/digest.ts";
import { PRESETS } from "../kernels/config.ts";
import { checkCohortProposal, type CohortContext, NOTHING_CONSUMED } from "../ledger/data/document.ts";
import { SOURCES, testCohort } from "../tests/ledger/data/_cohort.ts";

const cohort = testCohort({
  previous: "d0".repeat(32),
  tokenizer_root: "c0".repeat(32),
  cursors: { "chat-retention": 0, "chat-train": 0 },
  salt: "bench",
  train: 128,
  trainLength: 256,
  evalLength: 128,
});
const context: CohortContext = {
  data_root: "d0".repeat(32),
  tokenizer_root: "c0".repeat(32),
  sources: new Map(SOURCES.map((s) => [s.name, s])),
  cursors: { "chat-retention": 0, "chat-train": 0 },
  config: PRESETS.devnet,
  consumed: NOTHING_CONSUMED,
};
if (!checkCohortProposal(cohort.root, cohort.metadata, context).ok) {
  throw new Error("the bench cohort is invalid");
}

Deno.bench("hash the metadata of a 192-document proposal (peer)", { group: "cohort", baseline: true }, () => {
  for (const v of Object.values(cohort.metadata)) id(v);
});

Deno.bench("checkCohortProposal of a 192-document proposal", { group: "cohort" }, () => {
  checkCohortProposal(cohort.root, cohort.metadata, context);
});
