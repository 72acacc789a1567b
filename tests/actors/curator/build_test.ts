/**
 * Building a cohort from a corpus (pure): exactly 32 retention and 32 fresh documents, train documents up to
 * the bound, windows from the cursors to the last row taken, roles fixed by source and held-out id, and a
 * document the ledger's own check accepts; too few documents are refused.
 */
import { buildCohort } from "../../../actors/curator/build.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { checkCohortProposal, NOTHING_CONSUMED } from "../../../ledger/data/document.ts";
import { allowedRoles } from "../../../ledger/data/source.ts";
import { assertEquals, assertThrows } from "../../_assert.ts";
import { codec, fixtureCorpus, writeFixtureSources } from "./_fixture.ts";

const ROOT = "d".repeat(64);

Deno.test("a built cohort passes the ledger's checks with 32 retention, 32 fresh and the train bound", async () => {
  const { config } = await writeFixtureSources();
  const { corpus, messages } = await fixtureCorpus(config);
  const c = codec();
  const facts = {
    data_root: ROOT,
    tokenizer_root: c.root,
    cursors: { "fixture-fresh": 3 },
    consumed: NOTHING_CONSUMED,
  };
  const built = buildCohort({
    corpus,
    sources: config.sources,
    facts,
    codec: c,
    windows: config.windows,
    train: 20,
    messages: (d) => messages.get(d.object)!,
  });
  const docs = built.document.documents;
  const count = (r: string) => docs.filter((d) => d.role === r).length;
  assertEquals([count("retention"), count("fresh"), count("train")], [32, 32, 20]);
  for (const d of docs) {
    const spec = config.sources.find((s) => s.spec.name === d.source)!.spec;
    assertEquals(allowedRoles(spec.role, d.id).includes(d.role), true);
  }
  const fresh = built.document.windows.find((w) => w.source === "fixture-fresh")!;
  assertEquals(fresh.start, 3);
  assertEquals(
    fresh.end,
    Math.max(...docs.filter((d) => d.source === "fixture-fresh").map((d) => d.row)) + 1,
  );
  const checked = checkCohortProposal(built.root, built.metadata, {
    ...facts,
    sources: new Map(config.sources.map((s) => [s.spec.name, s.spec])),
    config: { vocab_size: c.manifest.vocabulary, max_position_embeddings: 1024 },
  });
  assertEquals(checked.ok, true, checked.ok ? "" : checked.message);
});

Deno.test("too few collected evaluation documents are refused with invalid_proposal", async () => {
  const { config } = await writeFixtureSources({ retention: 20, fresh: 10, train: 40 });
  const { corpus, messages } = await fixtureCorpus(config);
  const c = codec();
  const e = assertThrows(() =>
    buildCohort({
      corpus,
      sources: config.sources,
      facts: { data_root: ROOT, tokenizer_root: c.root, cursors: {}, consumed: NOTHING_CONSUMED },
      codec: c,
      windows: config.windows,
      train: 8,
      messages: (d) => messages.get(d.object)!,
    }), ProtocolError);
  assertEquals((e as ProtocolError).code, "invalid_proposal");
  assertEquals(e.message.includes("20 retention"), true, e.message);
});
