/**
 * Builds the SmolLM2 devnet (`deno task devnet --model smollm2`, default `.neuroshard/devnet-smollm2/`): a
 * genesis whose model and codec are the contents of `smollm2_contents.ts` computed from the fetched GGUF and
 * checked against the pin `genesis/pins/smollm2_genesis.json` (so every build pins the same roots),
 * `SMOLLM2_PARAMS` (windows long enough for a real stage to be computed, replayed and disputed), the data
 * lifecycle over the small devnet's pinned sources (`sources.ts`: the bundled generator's chat conversations,
 * which the Curator and the reviewers cut with the SmolLM2 codec into `SMOLLM2_CURATOR_WINDOWS`, the Curator
 * collecting only rows of `SMOLLM2_CURATOR_MIN_TARGETS` response targets or more; 8 retention and 8 fresh
 * documents a cohort, one scheduled step a cohort), and the validator homes of `ledger_devnet.ts`,
 * each with its own copy of the sources and a review policy; homes with an account key and a bearer token
 * (0600) for four workers (three hold the 30-block model at 48M parameters each, the fourth takes the blocks a
 * growth adds), a forging worker, the sponsor, the referee, the Curator, the Evaluator, a Provider and a paying
 * client. The model's objects are written once into `objects/` and hard-linked into every home that computes
 * or checks stages (no copy per home; validators need only the codec, to review: a dispute brings them the
 * sealed bytes).
 *
 * `cohorts: false` builds the earlier chain instead: no data lifecycle, the pinned genesis batch trained every
 * round (the worker-kill check, which is about a step's lease, runs on it with two validators).
 *
 * The build happens in `<dir>.building/` and is renamed into place at the end.
 *
 * @example
 * ```ts
 * import { ensureSmollm2Devnet } from "./smollm2_build.ts";
 * // const layout = await ensureSmollm2Devnet({ dir: ".neuroshard/devnet-smollm2", gguf: ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf" });
 * ```
 */
import { canonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { ATOMS_PER_NEURO, type WorkflowParams } from "../../workflows/params.ts";
import {
  beginDevnetBuild,
  createActorHomes,
  DEVNET_GENESIS_TIME,
  type DevnetLayout,
  finishDevnetBuild,
  readDevnet,
  writeOperatorSources,
} from "../devnet_builder.ts";
import { writeDevnetGenesis } from "../ledger_devnet.ts";
import pin from "../pins/smollm2_genesis.json" with { type: "json" };
import type { DevnetContents } from "./contents.ts";
import { smollm2Contents } from "./smollm2_contents.ts";
import { devnetDataSection, devnetSourceFiles, type SourceFile } from "./sources.ts";
import type { WindowOptions } from "../../text/windows.ts";

/**
 * The windows the SmolLM2 devnet's Curator and reviewers cut each document into: one window of 64 prompt and 64
 * target tokens (the profile's lengths, as the genesis batch's), so an evaluation group of 8 documents is 8
 * windows, 2 scores of 4.
 */
export const SMOLLM2_CURATOR_WINDOWS: WindowOptions = { context: 64, response: 64, maxWindows: 1 };

/**
 * The SmolLM2 devnet Curator's screening rule (sources file `min_targets`): it collects only rows whose window
 * has at least 10 response targets. A cohort schedules one window a step, and a clipped step at 2^-6 on a window
 * of a few targets (`tekcaj`: 5) still moves the weights by up to 1/64 in one direction: the model trained on
 * such windows lost Paris and failed the gate; on windows of 10 or more it keeps Paris and both gate groups
 * pass (PROTOCOL §15.1, `devnet/smollm2_gate_check.ts --cohorts --min-targets 10`).
 */
export const SMOLLM2_CURATOR_MIN_TARGETS = 10;

/**
 * The SmolLM2 devnet's parameters beside `DEVNET_PARAMS` (1 s blocks; PROTOCOL §15.1 gives the measurements).
 * The challenge windows are what a check-1 run mostly waits for (three of them: the honest step, the growth,
 * the grown step), so they are sized from what the referee needs now, not from the first runs:
 *
 * - `challenge_blocks` 300: the referee's verdict on a real step is in well before (stage replays of 7, 4 and
 *   3 s at a load average of 18; the worst ever measured, at load 25 with the kernels of the first run, was
 *   the fourth stage of the grown step 260 s after its claim, and 240 blocks to reach a forged third stage);
 * - `availability_blocks` 720: a forged step's dispute now uploads the one pinpointed block (19 upload and
 *   seal transactions, 20 s at load 18), and the proposer holds the resolve at most 300 s while validators
 *   compute its verdict ahead: 2.2× that worst case;
 * - `lease_blocks` 1,200: 2.3× the slowest step measured (518 blocks reserve → claim at load 25);
 * - `max_claim_blocks` 1,500: a challenge window, a dispute's availability window and a reopened window;
 * - paid inference windows longer than the challenge window (PROTOCOL §8).
 */
export const SMOLLM2_PARAMS: Partial<WorkflowParams> = {
  lease_blocks: 1_200,
  challenge_blocks: 300,
  availability_blocks: 720,
  max_claim_blocks: 1_500,
  // Paid inference must outlast a challenge window (PROTOCOL §8).
  min_inference_blocks: 400,
  max_inference_blocks: 1_200,
  // One scheduled step a cohort: the scenario's first cohort trains the honest step, its second the forged
  // step's round, which a growth must precede (growth is allowed only before a cohort's first step, §6).
  steps_per_cohort: 1,
  // Four validators review a cohort of 160 SmolLM2-cut documents and vote: 4 min at 1 s blocks.
  proposal_blocks: 240,
  // Two rounds of score claims (each a challenge window) on a loaded machine: an hour.
  evaluation_blocks: 3_600,
};

/** The block byte bound of the SmolLM2 devnet: 8 MiB, five 1 MiB upload chunks a block. */
export const SMOLLM2_BLOCK_BYTES = 8 * 1024 * 1024;

/** Initial balances of the SmolLM2 devnet's actors, in atoms. */
export const SMOLLM2_FUNDING = {
  sponsor: 1_000 * ATOMS_PER_NEURO,
  referee: 100 * ATOMS_PER_NEURO,
  worker: 10 * ATOMS_PER_NEURO,
  /** Locks `provider_bond` per response (PROTOCOL §8). */
  provider: 100 * ATOMS_PER_NEURO,
  /** Locks a claim bond per proposal (PROTOCOL §6). */
  curator: 100 * ATOMS_PER_NEURO,
  /** Locks a claim bond per score claim (PROTOCOL §7). */
  evaluator: 200 * ATOMS_PER_NEURO,
  /** Pays for the answer bought through paid inference. */
  client: 10 * ATOMS_PER_NEURO,
} as const;

/** The homes of the SmolLM2 devnet's actors, in the order their keys are made. */
export const SMOLLM2_ACTORS = [
  "worker-0",
  "worker-1",
  "worker-2",
  "worker-3",
  "forger",
  "sponsor",
  "referee",
  "curator",
  "evaluator",
  "provider",
  "client",
];

/** The homes that compute or check stages, or serve the genesis model, and so get the genesis objects. */
const OBJECT_HOMES = ["worker-0", "worker-1", "worker-2", "worker-3", "forger", "referee", "provider"];

/** Options of the build. */
export interface Smollm2BuildOptions {
  readonly dir: string;
  /** The fetched GGUF (`deno task model:fetch-smollm2`). */
  readonly gguf: string;
  /** Parameters over `SMOLLM2_PARAMS` (a test's shorter lease, say); the pinned contents stay the same. */
  readonly params?: Partial<WorkflowParams>;
  /** The data lifecycle (default true); false trains the pinned genesis batch every round instead. */
  readonly cohorts?: boolean;
}

/** The genesis fields the contents pin: model, codec, and the one training batch with its rate and clip. */
export function smollm2TrainingFields(c: {
  model: { manifest: unknown; root: string };
  codec: { root: string; manifest: unknown };
  batches: readonly unknown[];
  learningRate: string;
  clip: string;
}): JsonObject {
  return {
    model: { manifest: c.model.manifest as JsonObject, root: c.model.root },
    codec: { root: c.codec.root, manifest: c.codec.manifest as JsonObject },
    training: { learning_rate: c.learningRate, clip: c.clip, batches: c.batches as JsonValue[] },
  };
}

/** The pinned genesis fields (`genesis/pins/smollm2_genesis.json`), usable without the model file. */
export function pinnedTrainingFields(): JsonObject {
  return smollm2TrainingFields({
    model: pin.model,
    codec: pin.codec,
    batches: pin.training.batches,
    learningRate: pin.training.learning_rate,
    clip: pin.training.clip,
  });
}

/**
 * The genesis fields of the SmolLM2 devnet with the data lifecycle: the pinned `fields` (model, codec, rate,
 * clip) with no genesis batches, and the `data` section pinning `sources` (every cursor at 0, 8 evaluation
 * documents a cohort): the chain trains only on cohorts its validators voted in.
 */
export function cohortTrainingFields(fields: JsonObject, sources: readonly SourceFile[]): JsonObject {
  return {
    ...fields,
    training: { ...(fields.training as JsonObject), batches: [] },
    data: devnetDataSection(sources),
  };
}

/** Throws `invalid_model` unless the contents computed from the file are the pinned ones. */
export function checkPinned(contents: DevnetContents): void {
  const got = id(smollm2TrainingFields(contents));
  const want = id(pinnedTrainingFields());
  if (got !== want) {
    throw new ProtocolError(
      "invalid_model",
      `Cannot build the SmolLM2 devnet: its genesis contents are ${got}, expected the pinned ${want} (model root ${contents.model.root}, pinned ${pin.model.root})`,
    );
  }
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, (e) => {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  });
}

/** Hard-links every object of `from` into `to` (a copy where the file system refuses a link). */
async function linkObjects(from: ObjectStore, to: ObjectStore, roots: Iterable<string>): Promise<void> {
  for (const root of roots) {
    const target = to.pathOf(root);
    if (await exists(target)) continue;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    await Deno.link(from.pathOf(root), target).catch(() => Deno.copyFile(from.pathOf(root), target));
  }
}

/** Builds the SmolLM2 devnet at `dir` unless a genesis is there already; returns its layout either way. */
export async function ensureSmollm2Devnet(
  options: Smollm2BuildOptions,
  progress: (line: string) => void = () => {},
): Promise<DevnetLayout & { built: boolean }> {
  const dir = options.dir.replace(/\/+$/, "");
  const staging = await beginDevnetBuild(dir);
  if (staging === null) return { ...(await readDevnet(dir)), built: false };
  progress(`importing SmolLM2 from ${options.gguf}`);
  const file = options.gguf.slice(options.gguf.lastIndexOf("/") + 1);
  let contents: DevnetContents | null = smollm2Contents(await Deno.readFile(options.gguf), file);
  checkPinned(contents);
  progress(
    `model ${contents.model.root} (${contents.model.manifest.parameters} parameters), codec ${contents.codec.root}`,
  );
  const accounts = await createActorHomes(
    staging,
    SMOLLM2_ACTORS.map((name) =>
      [
        name,
        name.startsWith("worker") || name === "forger"
          ? SMOLLM2_FUNDING.worker
          : SMOLLM2_FUNDING[name as Exclude<keyof typeof SMOLLM2_FUNDING, "worker">],
      ] as const
    ),
  );
  const cohorts = options.cohorts ?? true;
  const sources = cohorts ? devnetSourceFiles() : [];
  const fields = smollm2TrainingFields(contents);
  const ledger = await writeDevnetGenesis({
    out: staging,
    validators: 4,
    time: DEVNET_GENESIS_TIME,
    blockIntervalMs: 1_000,
    accounts,
    ...(cohorts ? cohortTrainingFields(fields, sources) : fields),
    params: { ...SMOLLM2_PARAMS, ...options.params },
  });
  if (cohorts) {
    await writeOperatorSources(
      staging,
      ledger.homes,
      sources,
      SMOLLM2_CURATOR_WINDOWS,
      SMOLLM2_CURATOR_MIN_TARGETS,
    );
  }
  progress("storing the model once and linking it into the workers' and the referee's homes");
  const shared = new ObjectStore(`${staging}/objects`);
  for (const [root, bytes] of contents.objects) await shared.putExpected(root, bytes);
  const roots = [...contents.objects.keys()];
  const codecRoot = contents.codec.root, codecBackend = sha256Hex(contents.codec.backend);
  contents = null; // the float32 files are on disk now; let them go before anything else runs
  for (const home of OBJECT_HOMES) {
    await linkObjects(shared, new ObjectStore(`${staging}/${home}/objects`), roots);
  }
  // The Curator and the reviewing validators cut documents with the codec (its manifest and backend).
  const codecObjects = roots.filter((r) => r === codecRoot || r === codecBackend);
  for (const home of [`${staging}/curator`, ...ledger.homes]) {
    await linkObjects(shared, new ObjectStore(`${home}/objects`), codecObjects);
  }
  await Deno.writeTextFile(`${staging}/model.json`, canonical({ model: "smollm2", gguf: file }) + "\n");
  return await finishDevnetBuild(staging, dir);
}
