/**
 * Builds the whole devnet under one directory (default `.neuroshard/devnet/`): the ledger genesis (with
 * `DEVNET_PARAMS`: short windows, so a step settles in seconds, and a cohort schedule of `stepsPerCohort` steps) and the
 * validator homes of `ledger_devnet.ts` (called, not copied), given the training contents of
 * `devnet/contents.ts` (codec, model manifest and root, learning rate, clip) and the data lifecycle over the
 * pinned sources of `devnet/sources.ts` (no genesis training batches: the devnet trains on admitted cohorts
 * only), a home with an account key (0600) and a bearer token (0600) for each worker, a fourth (forging)
 * worker, the sponsor, the referee, the evaluator, the curator, two providers (one run with `--forge token`) and a paying
 * client, funded accounts for them, the genesis objects (codec and model components) in a shared `objects/`
 * and in every home's `objects/`, and the source files with a `sources.json` in `sources/`,
 * `curator/sources/` and every `validator-<i>/sources/` (each validator also gets `review-policy.json` for
 * `deno task validator --review-policy`). Everything is deterministic except the keys and tokens.
 *
 * The build happens in `<dir>.building/` and is renamed into place at the end, so a build killed half way
 * leaves no devnet behind and the next build starts over.
 *
 * Layout: `genesis.json`, `objects/`, `sources/`, `faucet/account.key`, `validator-<i>/`, `worker-<i>/`,
 * `forger/`, `sponsor/`, `referee/`, `evaluator/`, `curator/`, `provider/`, `provider-forger/`, `client/` (each actor home:
 * `account.key`, `token`, `objects/`).
 *
 * @example
 * ```ts
 * import { ensureDevnet } from "./devnet_builder.ts";
 * const devnet = await ensureDevnet({ dir: ".neuroshard/devnet" });
 * devnet.genesisPath; // ".neuroshard/devnet/genesis.json"
 * ```
 */
import { type JsonObject, parseJson } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { ProtocolError } from "../core/errors.ts";
import { createKeyFile, loadKeyFile } from "../ledger/keys.ts";
import { loadToken } from "../actors/runtime/token.ts";
import { ATOMS_PER_NEURO } from "../workflows/params.ts";
import { type DevnetContents, devnetContents, storeContents } from "./devnet/contents.ts";
import { writeDevnetGenesis } from "./ledger_devnet.ts";
import {
  DEVNET_STEPS_PER_COHORT,
  devnetDataSection,
  devnetSourceFiles,
  type SourceFile,
  writeDevnetSources,
} from "./devnet/sources.ts";
import { genesisId } from "./schema.ts";
import type { WindowOptions } from "../text/windows.ts";

/** Options of the devnet build. */
export interface DevnetBuildOptions {
  readonly dir: string;
  readonly validators?: number;
  readonly workers?: number;
  /**
   * Proposer block interval in ms (default `DEVNET_BLOCK_INTERVAL_MS`, 250: the challenge window of
   * `DEVNET_BUILD_PARAMS` is then 12 s, and a step settles in about 15 s).
   */
  readonly blockIntervalMs?: number;
  /** Scheduled training steps of every cohort (genesis `params.steps_per_cohort`; default 64). */
  readonly stepsPerCohort?: number;
  /** The challenge window in blocks (genesis `params.challenge_blocks`; default `DEVNET_BUILD_PARAMS`' 48). */
  readonly challengeBlocks?: number;
}

/** The actor homes and files of a built devnet. */
export interface DevnetLayout {
  readonly dir: string;
  readonly genesisPath: string;
  readonly genesisId: string;
  readonly objects: string;
  readonly validators: string[];
  readonly workers: string[];
  /** The home of the dishonest worker the scenario runs with `--forge optimizer`. */
  readonly forger: string;
  /** The Curator's home (its own copy of the sources in `sources/`). */
  readonly curator: string;
  readonly sponsor: string;
  readonly referee: string;
  /** The Evaluator's home: it opens, scores and finishes the evaluation of each trained cohort. */
  readonly evaluator: string;
  /** The homes of the paid-inference roles: an honest provider, one the scenario runs with `--forge token`, and the paying client. */
  readonly provider: string;
  readonly providerForger: string;
  readonly client: string;
  readonly faucet: string;
  /** Account id of every key the devnet holds, by name (`validator-0`, `worker-1`, `sponsor`, ...). */
  readonly accounts: Record<string, string>;
}

/** The devnet proposer's block interval in ms: short blocks, so the windows below are seconds. */
export const DEVNET_BLOCK_INTERVAL_MS = 250;

/**
 * The devnet's parameters beyond `DEVNET_PARAMS`, for 250 ms blocks: a 48-block challenge window (12 s), so a
 * referee that replays every stage of the four score claims committed in one block still challenges a forged
 * one in time on a loaded machine (within about 2 s at light load, 6 s under a load average of 21); the
 * deadlines, which cost nothing when met, are generous: a lease of 240 blocks (1 min), availability 160 (40 s:
 * a score's dispute took 13 s to resolve under that load), a claim's life 960 (4 min), a proposal's 480
 * (2 min: the scenario proposes the next cohort during the last round of an evaluation, which blocks the
 * activation until it is decided, one score window and its computation later); inference requests live at least 96 blocks (they must outlive the window), at most 800; an
 * evaluation has 3,600 blocks (15 min for its 2 or 3 rounds of one window).
 */
export const DEVNET_BUILD_PARAMS = {
  challenge_blocks: 48,
  lease_blocks: 240,
  availability_blocks: 160,
  max_claim_blocks: 960,
  proposal_blocks: 480,
  min_inference_blocks: 96,
  max_inference_blocks: 800,
  evaluation_blocks: 3_600,
} as const;

/** The devnet's genesis time (fixed, so the genesis depends only on the keys). */
export const DEVNET_GENESIS_TIME = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/** Initial balances of the actors, in atoms. */
export const DEVNET_FUNDING = {
  sponsor: 1_000 * ATOMS_PER_NEURO,
  curator: 100 * ATOMS_PER_NEURO,
  referee: 100 * ATOMS_PER_NEURO,
  evaluator: 200 * ATOMS_PER_NEURO,
  worker: 10 * ATOMS_PER_NEURO,
  provider: 100 * ATOMS_PER_NEURO,
  client: 10 * ATOMS_PER_NEURO,
} as const;

/**
 * The genesis fields that pin the training contents (schema of `genesis/schema.ts`): the model, the codec, the
 * step's learning rate and clip, and the data lifecycle over the devnet's pinned sources (so the genesis lists
 * no training batches: the devnet trains only on admitted cohorts).
 */
export function trainingFields(contents: DevnetContents, sources: readonly SourceFile[]): JsonObject {
  return {
    model: { manifest: contents.model.manifest as unknown as JsonObject, root: contents.model.root },
    codec: { root: contents.codec.root, manifest: contents.codec.manifest as unknown as JsonObject },
    training: { learning_rate: contents.learningRate, clip: contents.clip, batches: [] },
    data: devnetDataSection(sources),
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The layout (absolute paths) of the devnet at `dir`, which must be built; reads every key to name its account. */
export async function readDevnet(dir: string): Promise<DevnetLayout> {
  const d = await Deno.realPath(dir); // absolute, so paths in files written for the actors hold from anywhere
  const genesisPath = `${d}/genesis.json`;
  const genesis = parseJson(await Deno.readTextFile(genesisPath));
  const accounts: Record<string, string> = {};
  const names: string[] = [];
  for await (const entry of Deno.readDir(d)) {
    if (
      entry.isDirectory &&
      /^(validator-\d+|worker-\d+|forger|sponsor|referee|evaluator|curator|provider|provider-forger|client|faucet)$/
        .test(
          entry.name,
        )
    ) {
      names.push(entry.name);
    }
  }
  names.sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  for (const name of names) accounts[name] = (await loadKeyFile(`${d}/${name}/account.key`)).accountId;
  const homes = (prefix: string) => names.filter((n) => n.startsWith(prefix)).map((n) => `${d}/${n}`);
  return {
    dir: d,
    genesisPath,
    genesisId: genesisId(genesis),
    objects: `${d}/objects`,
    validators: homes("validator-"),
    workers: homes("worker-"),
    forger: `${d}/forger`,
    curator: `${d}/curator`,
    sponsor: `${d}/sponsor`,
    referee: `${d}/referee`,
    evaluator: `${d}/evaluator`,
    provider: `${d}/provider`,
    providerForger: `${d}/provider-forger`,
    client: `${d}/client`,
    faucet: `${d}/faucet/account.key`,
    accounts,
  };
}

/** Builds the devnet at `dir` unless a genesis is there already; returns its layout either way. */
export async function ensureDevnet(
  options: DevnetBuildOptions,
  progress: (line: string) => void = () => {},
): Promise<DevnetLayout & { built: boolean }> {
  const dir = options.dir.replace(/\/+$/, "");
  const staging = await beginDevnetBuild(dir);
  if (staging === null) return { ...(await readDevnet(dir)), built: false };
  progress("training the devnet tokenizer and initialising the devnet model");
  const contents = devnetContents();
  const sources = devnetSourceFiles();
  progress(
    `codec ${contents.codec.root}, model ${contents.model.root}, sources ${
      sources.map((f) => `${f.file} (${f.spec.role})`).join(", ")
    }`,
  );
  const actors = [
    ...Array.from(
      { length: options.workers ?? 3 },
      (_, i) => [`worker-${i}`, DEVNET_FUNDING.worker] as const,
    ),
    ["forger", DEVNET_FUNDING.worker] as const,
    ["sponsor", DEVNET_FUNDING.sponsor] as const,
    ["referee", DEVNET_FUNDING.referee] as const,
    ["evaluator", DEVNET_FUNDING.evaluator] as const,
    ["curator", DEVNET_FUNDING.curator] as const,
    ["provider", DEVNET_FUNDING.provider] as const,
    ["provider-forger", DEVNET_FUNDING.provider] as const,
    ["client", DEVNET_FUNDING.client] as const,
  ];
  const accounts = await createActorHomes(staging, actors);
  const ledger = await writeDevnetGenesis({
    out: staging,
    validators: options.validators ?? 4,
    time: DEVNET_GENESIS_TIME,
    blockIntervalMs: options.blockIntervalMs ?? DEVNET_BLOCK_INTERVAL_MS,
    accounts,
    ...trainingFields(contents, sources),
    params: {
      ...DEVNET_BUILD_PARAMS,
      steps_per_cohort: options.stepsPerCohort ?? DEVNET_STEPS_PER_COHORT,
      challenge_blocks: options.challengeBlocks ?? DEVNET_BUILD_PARAMS.challenge_blocks,
    },
  });
  await writeOperatorSources(staging, ledger.homes, sources);
  progress("storing the genesis objects in every home");
  const homes = [...ledger.homes.map((h) => h.slice(h.lastIndexOf("/") + 1)), ...actors.map(([n]) => n)];
  await storeContents(new ObjectStore(`${staging}/objects`), contents);
  for (const home of homes) await storeContents(new ObjectStore(`${staging}/${home}/objects`), contents);
  return await finishDevnetBuild(staging, dir);
}

/**
 * Gives every operator its own copy of the raw source files (PROTOCOL §6): `staging/sources/`, the Curator's
 * `curator/sources/` (to collect) and each validator's `sources/` with a `review-policy.json` for `deno task
 * validator --review-policy` (to review and vote), all with the Curator's window settings `windows` and its
 * screening rule `minTargets` (the least response targets of every window of a collected row; 0: none).
 */
export async function writeOperatorSources(
  staging: string,
  validatorHomes: readonly string[],
  sources: readonly SourceFile[],
  windows?: WindowOptions,
  minTargets = 0,
): Promise<void> {
  await writeDevnetSources(`${staging}/sources`, sources, windows, minTargets);
  await writeDevnetSources(`${staging}/curator/sources`, sources, windows, minTargets);
  for (const home of validatorHomes) {
    await writeDevnetSources(`${home}/sources`, sources, windows, minTargets);
    await Deno.writeTextFile(
      `${home}/review-policy.json`,
      JSON.stringify({ sources: "sources/sources.json", poll_ms: 1000 }) + "\n",
    );
  }
}

/**
 * The start of a devnet build at `dir` (no trailing slash): null when `dir` already holds a genesis (nothing
 * to build), else the empty staging folder `<dir>.building/` (an earlier interrupted build's is removed);
 * `key_exists` when `dir` exists without a genesis.
 */
export async function beginDevnetBuild(dir: string): Promise<string | null> {
  if (await exists(`${dir}/genesis.json`)) return null;
  if (await exists(dir)) {
    throw new ProtocolError("key_exists", `Cannot build devnet: ${dir} exists but holds no genesis.json`);
  }
  const staging = `${dir}.building`;
  await Deno.remove(staging, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  return staging;
}

/** Makes each actor's home in `staging`: an account key and a bearer token (0600); the funded accounts. */
export async function createActorHomes(
  staging: string,
  actors: readonly (readonly [name: string, balance: number])[],
): Promise<{ id: string; balance: number }[]> {
  const accounts = [];
  for (const [name, balance] of actors) {
    const key = await createKeyFile(`${staging}/${name}/account.key`);
    await loadToken(`${staging}/${name}/token`);
    accounts.push({ id: key.accountId, balance });
  }
  return accounts;
}

/** Renames the finished `staging` into place at `dir` and reads its layout. */
export async function finishDevnetBuild(
  staging: string,
  dir: string,
): Promise<DevnetLayout & { built: boolean }> {
  await Deno.mkdir(dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : ".", { recursive: true });
  await Deno.rename(staging, dir);
  return { ...(await readDevnet(dir)), built: true };
}
