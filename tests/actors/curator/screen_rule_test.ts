/**
 * The Curator's `min_targets` screening rule (`usableRow`, sources file `min_targets`): a row any of whose
 * windows has fewer response targets is not collected (`invalid`, `invalid_batch`), the rest are; a sources file
 * with a `min_targets` outside 0–256 is refused (`invalid_source`).
 */
import assert from "node:assert/strict";
import { ProtocolError } from "../../../core/errors.ts";
import { MAX_MIN_TARGETS, parseSourcesConfig, sourcesFileValue } from "../../../actors/curator/config.ts";
import { Corpus } from "../../../actors/curator/corpus.ts";
import { screenTranche, usableRow } from "../../../actors/curator/screen.ts";
import { documentBatches } from "../../../actors/curator/windows.ts";
import { codec, FIXTURE_WINDOWS, fixtureRow } from "./_fixture.ts";

const windows = { context: FIXTURE_WINDOWS.context, response: FIXTURE_WINDOWS.response, maxWindows: 1 };

Deno.test("a Curator with min_targets collects only rows whose every window has that many response targets", () => {
  const c = codec();
  const rows = Array.from({ length: 12 }, (_, i) => fixtureRow("rule", i));
  const targets = rows.map((m) =>
    Math.min(
      ...documentBatches(c, m, windows, false).batches.map((b) =>
        b.labels[0]!.filter((l) => l !== -100).length
      ),
    )
  );
  const least = Math.max(...targets); // the fixture's rows have 7 or 8 targets: some are below it
  assert.ok(targets.some((t) => t < least) && targets.some((t) => t >= least), `${targets}`);
  const { tranche } = screenTranche({
    source: "rule",
    start: 0,
    rows,
    corpus: new Corpus(),
    consumed: new Set(),
    usable: usableRow(c, windows, least),
  });
  assert.deepEqual(tranche.kept.map((d) => d.row), targets.flatMap((t, i) => (t >= least ? [i] : [])));
  assert.deepEqual(
    tranche.dropped.map((d) => [d.row, d.reason, d.of]),
    targets.flatMap((t, i) => (t < least ? [[i, "invalid", "invalid_batch"]] : [])),
  );
  // Without the rule every row is collected.
  assert.equal(usableRow(c, windows)(rows[targets.indexOf(Math.min(...targets))]!), null);
});

Deno.test("a sources file's min_targets is an integer from 0 to 256, written only when set", () => {
  const spec = {
    name: "s",
    revision: "r",
    split: "train",
    license: "cc0-1.0",
    role: "train",
    format: "jsonl",
    sha256: "0".repeat(64),
  } as const;
  const plain = sourcesFileValue([{ file: "s.jsonl", spec }], windows);
  assert.equal("min_targets" in plain, false);
  assert.equal(parseSourcesConfig(plain, "/x/sources.json").minTargets, 0);
  const ruled = sourcesFileValue([{ file: "s.jsonl", spec }], windows, 10);
  assert.equal(ruled.min_targets, 10);
  assert.equal(parseSourcesConfig(ruled, "/x/sources.json").minTargets, 10);
  for (const bad of [-1, 2.5, MAX_MIN_TARGETS + 1, "10"]) {
    assert.throws(
      () => parseSourcesConfig({ ...plain, min_targets: bad }, "/x/sources.json"),
      (e: unknown) =>
        e instanceof ProtocolError && e.code === "invalid_source" && /min_targets is /.test(e.message),
    );
  }
});
