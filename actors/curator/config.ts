/**
 * The Curator's sources file: which pinned sources it reads, where its own copy of each file is, and how rows
 * are cut into windows. Relative `file` paths are read from the sources file's folder.
 *
 * ```json
 * {"sources": [{"file": "chat.jsonl", "spec": {"name": "…", "revision": "…", "split": "train",
 *   "license": "…", "role": "train", "format": "jsonl", "sha256": "…"}}],
 *  "windows": {"context": 64, "response": 64, "max_windows": 4}, "min_targets": 10}
 * ```
 *
 * `windows` is optional (the profile's defaults). A reviewer's file must use the same window settings as the
 * curator whose proposals it reviews: the batches are rebuilt with them. `min_targets` (optional, 0 to 256,
 * default 0) is the Curator's own screening rule: a row any of whose windows has fewer response targets is
 * not collected (a step on a window of a few targets is mostly noise); reviewers need not share it, since a
 * cohort may leave rows of its windows untaken.
 *
 * @example
 * ```ts
 * import { loadSourcesFile } from "./config.ts";
 * const config = await loadSourcesFile("curator/sources.json");
 * config.sources[0].spec.name;
 * ```
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { hasExactKeys, isObject, type JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { parseSourceSpec, type SourceSpec } from "../../text/sources/spec.ts";
import { checkWindowOptions, DEFAULT_WINDOWS, type WindowOptions } from "../../text/windows.ts";

/** One source the curator reads. */
export interface CuratorSource {
  readonly spec: SourceSpec;
  /** Absolute path of the curator's copy of the file. */
  readonly file: string;
}

/** A loaded sources file. */
export interface SourcesConfig {
  readonly path: string;
  /** In the file's order; names are unique. */
  readonly sources: readonly CuratorSource[];
  readonly windows: WindowOptions;
  /** The least response targets every window of a collected row has (0: no rule). */
  readonly minTargets: number;
}

/** The largest `min_targets` (a window holds at most 256 tokens). */
export const MAX_MIN_TARGETS = 256;

/** The largest number of sources in one file (a cohort has at most 8 windows). */
export const MAX_SOURCES = 8;

function fail(path: string, message: string): never {
  throw new ProtocolError("invalid_source", `Cannot read sources file ${path}: ${message}`);
}

/** Checks a sources value read from `path`. */
export function parseSourcesConfig(value: unknown, path: string): SourcesConfig {
  if (
    !isObject(value) || !Array.isArray(value.sources) ||
    Object.keys(value).some((k) => k !== "sources" && k !== "windows" && k !== "min_targets")
  ) {
    fail(path, "expected {sources: [...], windows?: {...}, min_targets?: N}");
  }
  const minTargets = value.min_targets ?? 0;
  if (
    !Number.isSafeInteger(minTargets) || (minTargets as number) < 0 ||
    (minTargets as number) > MAX_MIN_TARGETS
  ) {
    fail(
      path,
      `min_targets is ${JSON.stringify(minTargets)}, expected an integer from 0 to ${MAX_MIN_TARGETS}`,
    );
  }
  const list = value.sources;
  if (list.length < 1 || list.length > MAX_SOURCES) {
    fail(path, `it lists ${list.length} sources, expected 1 to ${MAX_SOURCES}`);
  }
  const names = new Set<string>();
  const sources = list.map((entry, i): CuratorSource => {
    if (
      !isObject(entry) || !hasExactKeys(entry, ["file", "spec"]) || typeof entry.file !== "string" ||
      entry.file === ""
    ) {
      fail(path, `sources[${i}] is not {file, spec}`);
    }
    const spec = parseSourceSpec(entry.spec);
    if (names.has(spec.name)) fail(path, `source ${spec.name} is listed twice`);
    names.add(spec.name);
    const file = isAbsolute(entry.file) ? entry.file : resolve(dirname(path), entry.file);
    return { spec, file };
  });
  let windows = DEFAULT_WINDOWS;
  if (value.windows !== undefined) {
    const w = value.windows as JsonObject;
    if (!isObject(w) || !hasExactKeys(w, ["context", "max_windows", "response"])) {
      fail(path, "windows is not {context, response, max_windows}");
    }
    windows = {
      context: w.context as number,
      response: w.response as number,
      maxWindows: w.max_windows as number,
    };
    checkWindowOptions(windows);
  }
  return { path, sources, windows, minTargets: minTargets as number };
}

/** Reads and checks the sources file at `path`. */
export async function loadSourcesFile(path: string): Promise<SourcesConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ProtocolError("not_found", `Cannot read sources file ${path}: it does not exist`);
    }
    throw e;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    fail(path, (e as Error).message);
  }
  return parseSourcesConfig(value, resolve(path));
}

/** The sources file value for `sources` (relative file names are kept as given). */
export function sourcesFileValue(
  sources: readonly { file: string; spec: SourceSpec }[],
  windows: WindowOptions = DEFAULT_WINDOWS,
  minTargets = 0,
): JsonObject {
  return {
    sources: sources.map((s) => ({ file: s.file, spec: { ...s.spec } })),
    windows: { context: windows.context, response: windows.response, max_windows: windows.maxWindows },
    ...(minTargets > 0 ? { min_targets: minTargets } : {}),
  };
}
