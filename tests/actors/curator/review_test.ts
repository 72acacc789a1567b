/**
 * Review from the reviewer's own raw files (pure): an honest cohort is approved; one substituted window (its
 * token ids no longer match the raw row) is rejected with the document named; a reviewer whose copy of a
 * source differs (another SHA-256) rejects every document of that source.
 */
import type { JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { buildCohort } from "../../../actors/curator/build.ts";
import { reviewProposal } from "../../../actors/curator/review.ts";
import { type CohortDocument, NOTHING_CONSUMED } from "../../../ledger/data/document.ts";
import { assertEquals } from "../../_assert.ts";
import { codec, fixtureCorpus, readRow, writeFixtureSources } from "./_fixture.ts";

const ROOT = "d".repeat(64);

async function setup() {
  const { config, dir } = await writeFixtureSources();
  const { corpus, messages } = await fixtureCorpus(config);
  const c = codec();
  const facts = {
    height: 10,
    data_root: ROOT,
    tokenizer_root: c.root,
    cursors: {},
    config: { vocab_size: c.manifest.vocabulary, max_position_embeddings: 1024 },
    proposal: null,
  };
  const built = buildCohort({
    corpus,
    sources: config.sources,
    facts: { ...facts, consumed: NOTHING_CONSUMED },
    codec: c,
    windows: config.windows,
    train: 12,
    messages: (d) => messages.get(d.object)!,
  });
  const review = (document: CohortDocument, sources = config.sources) =>
    reviewProposal({
      proposal: { id: "e".repeat(64), status: "voting", data_root: id(document), document },
      facts,
      consumed: NOTHING_CONSUMED,
      sources,
      windows: config.windows,
      codec: c,
      read: readRow,
    });
  return { built, review, config, dir };
}

Deno.test("an honest cohort is approved with every batch rebuilt", async () => {
  const { built, review } = await setup();
  const report = await review(built.document);
  assertEquals([report.verdict, report.reasons], ["approve", []]);
  assertEquals(report.documents, 76);
  assertEquals(report.batches, built.batches.length);
});

Deno.test("one substituted window is rejected, naming the document", async () => {
  const { built, review } = await setup();
  const doc = structuredClone(built.document) as CohortDocument;
  const victim = doc.documents.find((d) => d.role === "train")!;
  // A window with one token changed: a valid batch of the same shape whose ids no longer match the row.
  const original = built.batches.find((b) => id(b as unknown as JsonValue) === victim.batches[0])!;
  const ids = [...original.input_ids[0]!];
  const t = ids.findIndex((_x, i) => i > 0 && original.labels[0]![i - 1] !== -100);
  ids[t] = (ids[t]! + 1) % 300;
  const forged = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };
  victim.batches = [id(forged as unknown as JsonValue), ...victim.batches.slice(1)];
  const report = await review(doc);
  assertEquals(report.verdict, "reject");
  assertEquals(report.reasons.length, 1);
  assertEquals(report.reasons[0]!.document, victim.id);
  assertEquals([report.reasons[0]!.code, report.reasons[0]!.source, report.reasons[0]!.row], [
    "batch_mismatch",
    victim.source,
    victim.row,
  ]);
  assertEquals(report.reasons[0]!.message.includes("window 0"), true);
});

Deno.test("a wrong raw object is named; a reviewer whose copy of a source differs rejects its documents", async () => {
  const { built, review, config, dir } = await setup();
  const doc = structuredClone(built.document) as CohortDocument;
  const fresh = doc.documents.find((d) => d.role === "fresh" && d.source === "fixture-fresh")!;
  fresh.object = "0".repeat(64);
  const report = await review(doc);
  assertEquals(report.verdict, "reject");
  assertEquals(report.reasons.map((r) => [r.document, r.code]), [[fresh.id, "document_mismatch"]]);
  // The reviewer's copy of the retention source has other bytes than the spec pins.
  await Deno.writeTextFile(`${dir}/fixture-retention.parquet`, "changed");
  const other = await review(built.document, config.sources);
  assertEquals(other.verdict, "reject");
  const retention = built.document.documents.filter((d) => d.source === "fixture-retention");
  assertEquals(
    other.reasons.filter((r) => r.code === "source_mismatch").map((r) => r.document),
    retention.map((d) => d.id),
  );
});
