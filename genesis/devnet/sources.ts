/**
 * The devnet's pinned sources: the bundled generator's text written as real source files, so the devnet
 * trains only on data a Curator collected, proposed and the validators voted in.
 *
 * | source | role | format | rows |
 * |---|---|---|---|
 * | `devnet-chat` | train | JSON Lines | generator rows after the tokenizer's (seed `devnet-0`) |
 * | `devnet-retention` | retention | Parquet | seed `devnet-retention` |
 * | `devnet-fresh` | fresh | JSON Lines | seed `devnet-fresh` |
 *
 * Every file is a pure function of the generator, so every build gets the same bytes and the same specs (and
 * so the same genesis `data` section). The Curator and each validator get their own copy of the files with a
 * sources file (`sources.json`) naming them; the windows are short (48 tokens of context, 32 of response, one
 * window a document) so a step takes seconds in the reference kernels.
 *
 * @example
 * ```ts
 * import { devnetSourceFiles, writeDevnetSources } from "./sources.ts";
 * const files = devnetSourceFiles(); // [{file, spec, bytes}, ...]
 * await writeDevnetSources(".neuroshard/devnet/curator/sources", files);
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import type { SourceSpec } from "../../text/sources/spec.ts";
import { jsonlBytes, parquetBytes } from "../../text/sources/write.ts";
import type { WindowOptions } from "../../text/windows.ts";
import { sourcesFileValue } from "../../actors/curator/config.ts";
import { DEVNET_TOKENIZER_ROWS } from "./codec.ts";
import { devnetRows, GENERATOR_VERSION } from "./generator.ts";

/**
 * Rows of each devnet source: a cohort takes 8 retention and 8 fresh documents that fit one window (about 18
 * rows of each source) and 128 train documents (about 145 rows), so the sources hold enough for 6 epochs
 * (192 evaluation rows each: fewer rows to screen at the first collect).
 */
export const DEVNET_SOURCE_ROWS = { train: 1024, retention: 192, fresh: 192 } as const;
/**
 * The Curator's and the reviewers' window settings on the devnet: one window of 48 tokens of context and 32
 * of response per document, so each evaluation group is exactly `DEVNET_EVALUATION_DOCUMENTS` windows.
 */
export const DEVNET_CURATOR_WINDOWS: WindowOptions = { context: 48, response: 32, maxWindows: 1 };
/**
 * Retention and fresh documents of every devnet cohort (genesis `data.evaluation_documents`): 8 of each, so an
 * evaluation is 2 scores of 4 windows per group (2 rounds of one challenge window) instead of the protocol
 * default's 8, and the gate still tests 8 paired documents per group.
 */
export const DEVNET_EVALUATION_DOCUMENTS = 8;
/** Blocks an activated devnet cohort has to finish its schedule. */
export const DEVNET_TRAINING_BLOCKS = 100_000;
/** Scheduled steps of a devnet cohort (the profile's most, so `--steps` has room). */
export const DEVNET_STEPS_PER_COHORT = 64;

/** One source file: its name in the sources folder, its spec and its bytes. */
export interface SourceFile {
  readonly file: string;
  readonly spec: SourceSpec;
  readonly bytes: Uint8Array;
}

function source(
  name: string,
  role: SourceSpec["role"],
  format: SourceSpec["format"],
  seed: string,
  first: number,
  rows: number,
): SourceFile {
  const data = devnetRows({ generator: GENERATOR_VERSION, seed }, first, rows);
  const bytes = format === "jsonl" ? jsonlBytes(data) : parquetBytes(data);
  const spec: SourceSpec = {
    name,
    revision: GENERATOR_VERSION,
    split: `rows-${first}-${first + rows - 1}`,
    license: "cc0-1.0",
    role,
    format,
    sha256: sha256Hex(bytes),
  };
  return { file: `${name}.${format}`, spec, bytes };
}

/** The three devnet source files (a second or so: the generator and the Parquet writer). */
export function devnetSourceFiles(): SourceFile[] {
  const r = DEVNET_SOURCE_ROWS;
  return [
    source("devnet-chat", "train", "jsonl", "devnet-0", DEVNET_TOKENIZER_ROWS, r.train),
    source("devnet-retention", "retention", "parquet", "devnet-retention", 0, r.retention),
    source("devnet-fresh", "fresh", "jsonl", "devnet-fresh", 0, r.fresh),
  ];
}

/** The genesis `data` section pinning `files`, every cursor at 0. */
export function devnetDataSection(files: readonly SourceFile[]): JsonObject {
  return {
    sources: files.map((f) => ({ ...f.spec })),
    cursors: Object.fromEntries(files.map((f) => [f.spec.name, 0])),
    training_blocks: DEVNET_TRAINING_BLOCKS,
    evaluation_documents: DEVNET_EVALUATION_DOCUMENTS,
  };
}

/**
 * Writes the files and a `sources.json` naming them into `dir` (an operator's own copy), with the window
 * settings its Curator or reviewer cuts documents by (the SmolLM2 devnet's are longer) and the Curator's
 * `min_targets` screening rule (0: none, the small devnet's).
 */
export async function writeDevnetSources(
  dir: string,
  files: readonly SourceFile[],
  windows: WindowOptions = DEVNET_CURATOR_WINDOWS,
  minTargets = 0,
): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  for (const f of files) await Deno.writeFile(`${dir}/${f.file}`, f.bytes);
  const path = `${dir}/sources.json`;
  await Deno.writeTextFile(
    path,
    JSON.stringify(
      sourcesFileValue(files.map((f) => ({ file: f.file, spec: f.spec })), windows, minTargets),
      null,
      2,
    ) +
      "\n",
  );
  return path;
}
