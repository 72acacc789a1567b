/**
 * A curator fixture: three pinned source files written in a temp dir (a `train` JSON Lines source, a
 * `retention` Parquet source and a `fresh` JSON Lines source), their sources file, the fixture codec, and
 * the screened corpus of all their rows (for the pure build and review tests).
 */
import type { JsonValue } from "../../../core/canonical.ts";
import { sha256Hex } from "../../../core/digest.ts";
import {
  type CuratorSource,
  parseSourcesConfig,
  type SourcesConfig,
  sourcesFileValue,
} from "../../../actors/curator/config.ts";
import { Corpus } from "../../../actors/curator/corpus.ts";
import { screenTranche } from "../../../actors/curator/screen.ts";
import { openSource } from "../../../text/sources/source.ts";
import type { SourceRole } from "../../../text/sources/spec.ts";
import { jsonlBytes, parquetBytes } from "../../../text/sources/write.ts";
import type { ChatMessage } from "../../../text/template_render.ts";
import type { TextCodec } from "../../../text/codec.ts";
import { FIXTURE_WORDS, fixtureTextCodec } from "../../text/_fixture.ts";
import { tempDir } from "../runtime/_temp.ts";

const WORDS = FIXTURE_WORDS;

/** Row `i` of source `salt`: a short question and answer from the fixture vocabulary, unique per (salt, i). */
export function fixtureRow(salt: string, i: number): ChatMessage[] {
  let x = [...`${salt}/${i}`].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 2147483647, 7);
  const words = Array.from({ length: 9 }, () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return WORDS[x % WORDS.length]!;
  });
  return [
    { role: "user", content: `${salt} ${i}: ${words.slice(0, 6).join(" ")}?` },
    { role: "assistant", content: `${words.slice(6).join(" ")} ${i}.` },
  ];
}

/** A long row (120 words) and, with `more`, the same row with one word appended: near duplicates. */
export function longRow(more: boolean): ChatMessage[] {
  const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
  return [{ role: "user", content: words }, {
    role: "assistant",
    content: `the answer is forty two${more ? " more" : ""}`,
  }];
}

/** Row `i` of `name` as written: the train source has an exact duplicate (row 50 of row 10, differing in
 * case, Unicode form and whitespace) and a near duplicate (row 61 of row 60). */
export function writtenRow(name: string, i: number): ChatMessage[] {
  if (name === "fixture-train" && i === 50) {
    return fixtureRow(name, 10).map((m) => ({
      role: m.role,
      content: `  ${m.content.toUpperCase().replaceAll(" ", " \t ").normalize("NFD")}\n`,
    }));
  }
  if (name === "fixture-train" && (i === 60 || i === 61)) return longRow(i === 61);
  return fixtureRow(name, i);
}

/** The windows of the fixture: short rows, evaluation documents always complete. */
export const FIXTURE_WINDOWS = { context: 24, response: 24, max_windows: 2 };

/** Writes the three sources (rows per source) and returns the sources config and paths. */
export async function writeFixtureSources(
  rows: Partial<Record<"train" | "retention" | "fresh", number>> = {},
  dir: string = tempDir("curator-src-"),
): Promise<{ dir: string; config: SourcesConfig; path: string }> {
  const plan: [string, SourceRole, "jsonl" | "parquet", number][] = [
    ["fixture-train", "train", "jsonl", rows.train ?? 120],
    ["fixture-retention", "retention", "parquet", rows.retention ?? 40],
    ["fixture-fresh", "fresh", "jsonl", rows.fresh ?? 40],
  ];
  const entries = [];
  for (const [name, role, format, n] of plan) {
    const data = Array.from({ length: n }, (_, i) => writtenRow(name, i));
    const bytes = format === "jsonl" ? jsonlBytes(data) : parquetBytes(data);
    const file = `${name}.${format}`;
    await Deno.writeFile(`${dir}/${file}`, bytes);
    entries.push({
      file,
      spec: {
        name,
        revision: "r1",
        split: "train",
        license: "cc0-1.0",
        role,
        format,
        sha256: sha256Hex(bytes),
      },
    });
  }
  const value = sourcesFileValue(entries as never, {
    context: FIXTURE_WINDOWS.context,
    response: FIXTURE_WINDOWS.response,
    maxWindows: FIXTURE_WINDOWS.max_windows,
  });
  const path = `${dir}/sources.json`;
  await Deno.writeTextFile(path, JSON.stringify(value, null, 2));
  return { dir, path, config: parseSourcesConfig(value as JsonValue, path) };
}

/** Screens every row of every source (no journal), and keeps each row's messages by object root. */
export async function fixtureCorpus(config: SourcesConfig): Promise<{
  corpus: Corpus;
  messages: Map<string, ChatMessage[]>;
}> {
  const corpus = new Corpus();
  const messages = new Map<string, ChatMessage[]>();
  for (const s of config.sources) {
    const src = await openSource(s.spec, s.file);
    const rows = await src.read(0, src.count);
    const { tranche } = screenTranche({
      source: s.spec.name,
      start: 0,
      rows,
      corpus,
      consumed: new Set(),
      usable: () => null,
    });
    corpus.add(tranche);
    for (const d of tranche.kept) messages.set(d.object, rows[d.row]!);
  }
  return { corpus, messages };
}

/** The fixture codec. */
export function codec(): TextCodec {
  return fixtureTextCodec();
}

/** Reads row `row` of a source (for review tests). */
export async function readRow(source: CuratorSource, row: number): Promise<ChatMessage[]> {
  return (await (await openSource(source.spec, source.file)).read(row, row + 1))[0]!;
}
