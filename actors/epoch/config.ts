/**
 * The epoch controller's configuration file (`deno task epoch --config epoch.json`), checked strictly: every
 * field is known, of the right type and in range, or the file is refused with `invalid_config` naming the
 * field. Relative paths are read from the config file's folder.
 *
 * ```json
 * {"genesis": "net/genesis.json", "sources": "curator/sources.json", "workers": "workers.json",
 *  "collect_rows": 256, "train_documents": 128, "attempts": 8, "epoch_atoms": 50000000,
 *  "daily": {"epochs": 1, "atoms": 100000000}, "growth": {"blocks": 1}, "poll_ms": 300}
 * ```
 *
 * - `genesis`: the chain's genesis file (its id must be the chain's; its params are the machine's env);
 * - `sources`: the Curator's sources file (`actors/curator/config.ts`), `workers`: the workers file;
 * - `collect_rows`: rows read from each source per epoch (1–4096), `train_documents`: train documents a
 *   cohort proposes at most (1–128), `attempts`: training attempts (reservations) one epoch may make (1–1024);
 * - `epoch_atoms`: the atoms one epoch is charged against the day's budget before it starts;
 * - `daily`: per UTC day, at most `epochs` epochs (1–1440) and `atoms` atoms charged (≥ `epoch_atoms`);
 * - `growth` (optional): `{blocks}` (1–16) identity blocks to add before each cohort's first step when the
 *   workers' capacities can hold the grown model (`growth.ts`); without it the model never grows;
 * - `poll_ms` (optional, default 300): how often the chain is polled while waiting (20–60000).
 *
 * @example
 * ```ts
 * import { loadEpochConfig } from "./config.ts";
 * // const config = await loadEpochConfig("epoch.json");
 * // config.daily.epochs;
 * ```
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { isObject, type JsonObject, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";

/** A checked epoch configuration; paths are absolute. */
export interface EpochConfig extends JsonObject {
  path: string;
  genesis: string;
  sources: string;
  workers: string;
  collect_rows: number;
  train_documents: number;
  attempts: number;
  epoch_atoms: number;
  daily: { epochs: number; atoms: number };
  /** Identity blocks to add before each cohort's first step when the workers can hold them (0: never). */
  growth: { blocks: number };
  poll_ms: number;
}

const FIELDS = [
  "genesis",
  "sources",
  "workers",
  "collect_rows",
  "train_documents",
  "attempts",
  "epoch_atoms",
  "daily",
  "growth",
  "poll_ms",
];
const OPTIONAL = new Set(["growth", "poll_ms"]);

function fail(path: string, message: string): never {
  throw new ProtocolError("invalid_config", `Cannot read epoch config ${path}: ${message}`);
}

function integer(path: string, field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    const shown = typeof v === "string" ? JSON.stringify(v) : String(v);
    fail(path, `${field} is ${shown}, expected an integer from ${min} to ${max}`);
  }
  return v;
}

function file(path: string, field: string, v: unknown): string {
  if (typeof v !== "string" || v === "" || v.length > 4096 || v.includes("\0")) {
    fail(path, `${field} is ${JSON.stringify(v)}, expected a file path`);
  }
  return isAbsolute(v) ? v : resolve(dirname(path), v);
}

function growthBlocks(path: string, v: unknown): number {
  if (v === undefined) return 0;
  if (!isObject(v) || Object.keys(v).length !== 1 || !("blocks" in v)) {
    fail(path, `growth is ${JSON.stringify(v)}, expected {"blocks": N}`);
  }
  return integer(path, "growth.blocks", v.blocks, 1, 16);
}

/** Checks a config value read from `path` (the base of its relative paths). */
export function parseEpochConfig(value: unknown, path: string): EpochConfig {
  if (!isObject(value)) fail(path, "expected a JSON object");
  for (const k of Object.keys(value)) {
    if (!FIELDS.includes(k)) fail(path, `unknown field ${k}, expected ${FIELDS.join(", ")}`);
  }
  for (const k of FIELDS) {
    if (!Object.hasOwn(value, k) && !OPTIONAL.has(k)) fail(path, `${k} is missing`);
  }
  const daily = value.daily;
  if (!isObject(daily) || Object.keys(daily).length !== 2 || !("epochs" in daily) || !("atoms" in daily)) {
    fail(path, `daily is ${JSON.stringify(daily)}, expected {"epochs": N, "atoms": N}`);
  }
  const epochAtoms = integer(path, "epoch_atoms", value.epoch_atoms, 0, Number.MAX_SAFE_INTEGER);
  return {
    path,
    genesis: file(path, "genesis", value.genesis),
    sources: file(path, "sources", value.sources),
    workers: file(path, "workers", value.workers),
    collect_rows: integer(path, "collect_rows", value.collect_rows, 1, 4096),
    train_documents: integer(path, "train_documents", value.train_documents, 1, 128),
    attempts: integer(path, "attempts", value.attempts, 1, 1024),
    epoch_atoms: epochAtoms,
    daily: {
      epochs: integer(path, "daily.epochs", daily.epochs, 1, 1440),
      atoms: integer(path, "daily.atoms", daily.atoms, epochAtoms, Number.MAX_SAFE_INTEGER),
    },
    growth: { blocks: growthBlocks(path, value.growth) },
    poll_ms: value.poll_ms === undefined ? 300 : integer(path, "poll_ms", value.poll_ms, 20, 60_000),
  };
}

/** Reads and checks the config file at `path`. */
export async function loadEpochConfig(path: string): Promise<EpochConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) fail(path, "no such file");
    throw e;
  }
  let value: unknown;
  try {
    value = parseJson(text);
  } catch (e) {
    fail(path, (e as Error).message);
  }
  return parseEpochConfig(value, resolve(path));
}
