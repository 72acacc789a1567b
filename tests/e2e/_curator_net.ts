/**
 * A whole network for the Curator tests: four validator processes (a proposer and three replicas) on a
 * genesis with the data lifecycle over three fixture sources (`../actors/curator/_fixture.ts`), each
 * validator with its own copy of the raw files and, when asked, `--review-policy` so it reviews and votes by
 * itself; funded curator homes holding the codec; and a runner for `deno task curator` as a real process.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { canonicalBytes } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { PRESETS } from "../../kernels/config.ts";
import { buildManifest, componentFiles } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { createKeyFile } from "../../ledger/keys.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { storeCodec } from "../../text/codec.ts";
import { ATOMS_PER_NEURO, type WorkflowParams } from "../../workflows/params.ts";
import { fixtureCodec } from "../text/_fixture.ts";
import { writeFixtureSources } from "../actors/curator/_fixture.ts";
import { tempDir } from "../actors/runtime/_temp.ts";
import { type NodeProc, startProc, stopProc } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** A running curator network. */
export interface CuratorNet {
  readonly dir: string;
  readonly rpc: string;
  readonly procs: NodeProc[];
  /** Funded curator homes (account.key and the codec in objects/; no journal yet). */
  readonly curators: string[];
  /** The curator's sources file. */
  readonly sources: string;
  readonly codecRoot: string;
  stop(): Promise<void>;
}

/** Options of the network. */
export interface CuratorNetOptions {
  /** Which validators run `--review-policy` (default none). */
  readonly autoReview?: readonly boolean[];
  readonly curators?: number;
  readonly params?: Partial<WorkflowParams>;
  readonly rows?: Partial<Record<"train" | "retention" | "fresh", number>>;
}

/** Copies the files of `from` (not recursive) into `to`. */
async function copyFiles(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile) await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

/** Builds and starts the network. */
export async function startCuratorNet(options: CuratorNetOptions = {}): Promise<CuratorNet> {
  const dir = tempDir("curator-net-");
  await Deno.mkdir(`${dir}/sources`);
  const { config, path: sources } = await writeFixtureSources(options.rows ?? {}, `${dir}/sources`);
  const codec = fixtureCodec();
  const model = initModel(PRESETS.devnet, 1);
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) roots[name] = sha256Hex(bytes);
  const manifest = buildManifest(model.config, roots, {
    origin: { kind: "init", seed: 1 },
    tokenizer_root: codec.root,
  });
  const curators: string[] = [];
  const accounts = [];
  for (let i = 0; i < (options.curators ?? 1); i++) {
    const home = `${dir}/curator-${i}`;
    const key = await createKeyFile(`${home}/account.key`);
    await storeCodec(new ObjectStore(`${home}/objects`), codec);
    curators.push(home);
    accounts.push({ id: key.accountId, balance: 100 * ATOMS_PER_NEURO });
  }
  const net = await writeDevnetGenesis({
    out: `${dir}/net`,
    validators: 4,
    time: 1_767_225_600_000,
    blockIntervalMs: 150,
    accounts,
    model: { manifest: manifest as unknown as JsonObject, root: sha256Hex(canonicalBytes(manifest)) },
    codec: { root: codec.root, manifest: codec.manifest as unknown as JsonObject },
    training: { learning_rate: toHexFloat(0.5), clip: toHexFloat(1), batches: [] },
    data: {
      sources: config.sources.map((s) => ({ ...s.spec })) as unknown as JsonValue[],
      cursors: Object.fromEntries(config.sources.map((s) => [s.spec.name, 0])),
      training_blocks: 10_000,
    },
    params: { proposal_blocks: 40, activation_blocks: 2, steps_per_cohort: 4, ...options.params },
  });
  const procs: NodeProc[] = [];
  try {
    for (const [i, home] of net.homes.entries()) {
      await copyFiles(`${dir}/sources`, `${home}/sources`);
      await storeCodec(new ObjectStore(`${home}/objects`), codec);
      await Deno.writeTextFile(
        `${home}/policy.json`,
        JSON.stringify({ sources: "sources/sources.json", poll_ms: 200 }),
      );
      const args = options.autoReview?.[i] ? ["--review-policy", `${home}/policy.json`] : [];
      procs.push(
        await startProc(home, net.genesisPath, { ...(i > 0 ? { follow: procs[0]!.url } : {}), args }),
      );
    }
  } catch (e) {
    for (const p of procs) await stopProc(p);
    throw e;
  }
  return {
    dir,
    rpc: procs[0]!.url,
    procs,
    curators,
    sources,
    codecRoot: codec.root,
    async stop() {
      for (const p of [...procs].reverse()) await stopProc(p);
    },
  };
}

/** The outcome of one `deno task curator` run. */
export interface CuratorRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `deno task curator <args>` as a process (with `env`, e.g. `NEURO_CRASH_AT`). */
export async function runCurator(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CuratorRun> {
  const o = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-net=127.0.0.1",
      `${ROOT}tasks/curator.ts`,
      ...args,
    ],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: o.code, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) };
}
