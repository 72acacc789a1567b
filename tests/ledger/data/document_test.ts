import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { canonicalBytes } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { MAX_COHORT_BYTES } from "../../../core/limits.ts";
import { PRESETS } from "../../../kernels/config.ts";
import {
  buildCohortDocument,
  checkCohortDocument,
  checkCohortProposal,
  type CohortContext,
  cohortMetadata,
  NOTHING_CONSUMED,
} from "../../../ledger/data/document.ts";
import { allowedRoles } from "../../../ledger/data/source.ts";
import { heldOutRole } from "../../../text/hygiene.ts";
import { assertEquals } from "../../_assert.ts";
import { SOURCES, testBatch, type TestCohort, testCohort } from "./_cohort.ts";

const DATA_ROOT = "d0".repeat(32);
const CODEC = "c0".repeat(32);
const CURSORS = { "chat-retention": 5, "chat-train": 100 };

function context(over: Partial<CohortContext> = {}): CohortContext {
  return {
    data_root: DATA_ROOT,
    tokenizer_root: CODEC,
    sources: new Map(SOURCES.map((s) => [s.name, s])),
    cursors: CURSORS,
    config: PRESETS.devnet,
    consumed: NOTHING_CONSUMED,
    ...over,
  };
}

function cohort(edit?: Parameters<typeof testCohort>[1], salt = "s1"): TestCohort {
  return testCohort({ previous: DATA_ROOT, tokenizer_root: CODEC, cursors: CURSORS, salt }, edit);
}

function code(c: TestCohort, ctx = context()): string {
  const r = checkCohortProposal(c.root, c.metadata, ctx);
  return r.ok ? "ok" : r.code;
}

/** Re-keys the metadata after editing the document value directly. */
function withDocument(c: TestCohort, document: JsonObject): TestCohort {
  const metadata: JsonObject = { [id(document)]: document };
  for (const [root, b] of c.batches) metadata[root] = b as unknown as JsonValue;
  return { ...c, document: document as never, root: id(document), metadata };
}

Deno.test("a well-formed cohort passes and names its pool, groups and new cursors", () => {
  const c = cohort();
  const r = checkCohortProposal(c.root, c.metadata, context());
  if (!r.ok) throw new Error(r.message);
  assertEquals(r.value.root, c.root);
  assertEquals(r.value.train_batches.length, 8);
  assertEquals(r.value.retention_batches.length, 32);
  assertEquals(r.value.fresh_batches.length, 32);
  // 32 retention rows used + 2 skipped; 32 fresh + 8 train rows used + 2 skipped.
  assertEquals(r.value.cursors, { "chat-retention": 5 + 34, "chat-train": 100 + 42 });
});

Deno.test("buildCohortDocument sorts windows by source and documents by source and row", () => {
  const c = cohort();
  const shuffled = buildCohortDocument({
    previous: DATA_ROOT,
    tokenizer_root: CODEC,
    windows: [...c.document.windows].reverse(),
    documents: [...c.document.documents].reverse(),
  });
  assertEquals(canonicalBytes(shuffled), canonicalBytes(c.document));
  assertEquals(c.document.format, "neuroshard-cohort-v1");
});

Deno.test("a window not at its source's cursor is window_not_at_cursor", () => {
  const c = testCohort({
    previous: DATA_ROOT,
    tokenizer_root: CODEC,
    cursors: { ...CURSORS, "chat-train": 101 },
    salt: "s1",
  });
  assertEquals(code(c), "window_not_at_cursor");
});

Deno.test("a held-out document labelled train and a train document labelled fresh are relabelled_heldout", () => {
  assertEquals(
    code(cohort((e) => (e.find((d) => d.role === "fresh")!.role = "train"))),
    "relabelled_heldout",
  );
  assertEquals(
    code(cohort((e) => (e.find((d) => d.role === "train")!.role = "fresh"))),
    "relabelled_heldout",
  );
  assertEquals(
    code(cohort((e) => (e.find((d) => d.role === "retention")!.role = "train"))),
    "relabelled_heldout",
  );
});

Deno.test("reused ids, positions and batch roots are refused, within the document or consumed before", () => {
  assertEquals(code(cohort((e) => (e[1]!.id = e[0]!.id))), "document_reused");
  assertEquals(code(cohort((e) => (e[1]!.row = e[0]!.row))), "position_reused");
  assertEquals(code(cohort((e) => (e[1]!.batches = [...e[0]!.batches]))), "batch_reused");
  const c = cohort();
  const d = c.document.documents[40]!;
  const only = (kind: "document" | "position" | "batch", hit: (x: string, row?: number) => boolean) =>
    context({ consumed: { ...NOTHING_CONSUMED, [kind]: hit } });
  assertEquals(code(c, only("document", (x) => x === d.id)), "document_reused");
  assertEquals(code(c, only("position", (s, row) => s === d.source && row === d.row)), "position_reused");
  assertEquals(code(c, only("batch", (x) => x === d.batches[0])), "batch_reused");
});

Deno.test("an evaluation document with omitted targets is incomplete_evaluation; a train one may omit", () => {
  assertEquals(
    code(cohort((e) => (e.find((d) => d.role === "fresh")!.omitted_targets = 3))),
    "incomplete_evaluation",
  );
  assertEquals(code(cohort((e) => (e.find((d) => d.role === "train")!.omitted_targets = 3))), "ok");
});

Deno.test("evaluation rows of one group must share one length of at most 128", () => {
  const mixed = cohort((e, batches) => {
    const d = e.find((x) => x.role === "retention" && x !== e[0])!;
    const b = testBatch("longer", 7);
    batches.delete(d.batches[0]!);
    d.batches = [id(b as unknown as JsonValue)];
    batches.set(d.batches[0]!, b);
  });
  assertEquals(code(mixed), "mixed_row_lengths");
  const long = testCohort({
    previous: DATA_ROOT,
    tokenizer_root: CODEC,
    cursors: CURSORS,
    salt: "s1",
    evalLength: 129,
  });
  assertEquals(code(long), "mixed_row_lengths");
  // Groups may differ from each other: all fresh rows 9 long, all retention rows 6 long.
  const groups = cohort((e, batches) => {
    for (const d of e.filter((x) => x.role === "fresh")) {
      const b = testBatch(`${d.id}/nine`, 9);
      batches.delete(d.batches[0]!);
      d.batches = [id(b as unknown as JsonValue)];
      batches.set(d.batches[0]!, b);
    }
  });
  assertEquals(code(groups), "ok");
});

Deno.test("a different tokenizer root is codec_mismatch and a stale previous is wrong_previous", () => {
  assertEquals(
    code(testCohort({ previous: DATA_ROOT, tokenizer_root: "c1".repeat(32), cursors: CURSORS, salt: "s1" })),
    "codec_mismatch",
  );
  assertEquals(
    code(testCohort({ previous: "d1".repeat(32), tokenizer_root: CODEC, cursors: CURSORS, salt: "s1" })),
    "wrong_previous",
  );
});

Deno.test("a context with evaluation_documents 8 wants exactly 8 retention and 8 fresh documents", () => {
  const ctx = context({ evaluation_documents: 8 });
  const of = (n: number) =>
    testCohort({ previous: DATA_ROOT, tokenizer_root: CODEC, cursors: CURSORS, salt: "s8", evaluation: n });
  assertEquals([code(of(8), ctx), code(of(32), ctx), code(of(4), ctx), code(of(8))], [
    "ok",
    "wrong_document_count",
    "wrong_document_count",
    "wrong_document_count",
  ]);
});

Deno.test("31 retention documents, no train document or 129 are wrong_document_count", () => {
  assertEquals(
    code(cohort((e) => e.splice(e.findIndex((d) => d.role === "retention"), 1))),
    "wrong_document_count",
  );
  assertEquals(code(cohort((e) => e.splice(64))), "wrong_document_count");
  assertEquals(
    code(
      testCohort({ previous: DATA_ROOT, tokenizer_root: CODEC, cursors: CURSORS, salt: "s1", train: 129 }),
    ),
    "wrong_document_count",
  );
  assertEquals(
    code(
      testCohort({ previous: DATA_ROOT, tokenizer_root: CODEC, cursors: CURSORS, salt: "s1", train: 128 }),
    ),
    "ok",
  );
});

Deno.test("a document over 1.5 MiB is too_large before anything else is read", () => {
  const c = cohort();
  const big = withDocument(c, { ...c.document, padding: "x".repeat(MAX_COHORT_BYTES) });
  assertEquals(code(big), "too_large");
  const r = checkCohortDocument(big.document, big.metadata, context());
  assertEquals(r.ok ? "ok" : r.code, "too_large");
});

Deno.test("rows outside the window, unpinned sources and malformed parts have their own codes", () => {
  assertEquals(code(cohort((e) => (e[0]!.row = 4))), "row_outside_window");
  assertEquals(code(cohort((e) => (e[0]!.row = 5 + 34))), "row_outside_window");
  const c = cohort();
  const stranger = withDocument(c, {
    ...c.document,
    windows: [...c.document.windows, { source: "elsewhere", start: 0, end: 1 }],
  });
  assertEquals(code(stranger), "unknown_source");
  const wide = withDocument(c, {
    ...c.document,
    windows: c.document.windows.map((w) => ({ ...w, end: w.start + 4097 })),
  });
  assertEquals(code(wide), "invalid_proposal");
  const empty = withDocument(c, {
    ...c.document,
    windows: c.document.windows.map((w) => ({ ...w, end: w.start })),
  });
  assertEquals(code(empty), "invalid_proposal");
  const unsorted = withDocument(c, { ...c.document, windows: [...c.document.windows].reverse() });
  assertEquals(code(unsorted), "invalid_proposal");
  assertEquals(code(withDocument(c, { ...c.document, format: "other" })), "invalid_proposal");
  assertEquals(code(cohort((e) => (e[0]!.batches = []))), "invalid_proposal");
});

Deno.test("batches must be in the metadata, one row, and target the next token", () => {
  const c = cohort();
  const missing = { ...c.metadata };
  delete missing[c.document.documents[0]!.batches[0]!];
  assertEquals(code({ ...c, metadata: missing }), "invalid_proposal");
  assertEquals(code({ ...c, metadata: { ...c.metadata, [id("extra")]: "extra" } }), "invalid_proposal");
  assertEquals(code({ ...c, metadata: { ...c.metadata, [id("x")]: "y" } }), "invalid_proposal");
  const shifted = cohort((e, batches) => {
    const b = testBatch("wrong targets", 8);
    b.labels[0]![2] = b.input_ids[0]![2]!;
    batches.delete(e[70]!.batches[0]!);
    e[70]!.batches = [id(b as unknown as JsonValue)];
    batches.set(e[70]!.batches[0]!, b);
  });
  assertEquals(code(shifted), "invalid_batch");
  const twoRows = cohort((e, batches) => {
    const a = testBatch("row a", 8), b = testBatch("row b", 8);
    const both = { input_ids: [a.input_ids[0]!, b.input_ids[0]!], labels: [a.labels[0]!, b.labels[0]!] };
    batches.delete(e[70]!.batches[0]!);
    e[70]!.batches = [id(both)];
    batches.set(e[70]!.batches[0]!, both);
  });
  assertEquals(code(twoRows), "invalid_batch");
});

Deno.test("cohortMetadata holds the document and each batch under its id", () => {
  const c = cohort();
  const m = cohortMetadata(c.document, [...c.batches.values()]);
  assertEquals(Object.keys(m).length, 1 + 72);
  for (const [k, v] of Object.entries(m)) assertEquals(id(v), k);
});

Deno.test("roles follow the source and the held-out id", () => {
  const held = Array.from({ length: 200 }, (_, n) => id(`r${n}`)).find((x) =>
    heldOutRole(x) === "evaluation"
  )!;
  const kept = Array.from({ length: 200 }, (_, n) => id(`r${n}`)).find((x) => heldOutRole(x) === "training")!;
  assertEquals(allowedRoles("train", held), ["fresh"]);
  assertEquals(allowedRoles("train", kept), ["train"]);
  assertEquals(allowedRoles("retention", held), ["retention"]);
  assertEquals(allowedRoles("fresh", kept), ["fresh"]);
  assertEquals(allowedRoles("heldout", kept), ["retention", "fresh"]);
});
