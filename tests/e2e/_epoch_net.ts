/**
 * A whole network for the epoch controller's tests, all real processes on 127.0.0.1: one validator on a
 * genesis with the data lifecycle over the Curator's fixture sources (`../actors/curator/_fixture.ts`), which
 * reviews every data proposal from its own copy of the raw files and votes by itself (`--review-policy`);
 * three workers holding a small model whose tokenizer is the fixture codec, with room for one more block; and a
 * funded controller home holding the codec, with its epoch config (`epoch.json`, growing one block per epoch).
 *
 * `buildEpochTemplate` writes all of it once without starting anything; `startEpochNet` copies a template to a
 * fresh folder and starts its processes, so two runs (an uninterrupted one and a crashed one) start from the
 * same keys and genesis and must end in the same state. `runEpoch` runs `deno task epoch` as a process.
 */
import { canonicalBytes, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import { ObjectStore } from "../../core/object_store.ts";
import type { ModelConfig } from "../../kernels/config.ts";
import { storeModel } from "../../kernels/manifest.ts";
import { componentParameters, initModel } from "../../kernels/model.ts";
import { createKeyFile, loadKeyFile } from "../../ledger/keys.ts";
import { writeDevnetGenesis } from "../../genesis/ledger_devnet.ts";
import { storeCodec } from "../../text/codec.ts";
import { ATOMS_PER_NEURO } from "../../workflows/params.ts";
import { ChainClient } from "../../actors/common/chain.ts";
import { fixtureCodec } from "../text/_fixture.ts";
import { writeFixtureSources } from "../actors/curator/_fixture.ts";
import { startTask, type TaskProcess } from "../actors/worker/_process.ts";
import { type NodeProc, startProc, stopProc } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The model the epoch network trains: small, with room for the fixture codec and its windows. */
export const EPOCH_MODEL: ModelConfig = {
  vocab_size: 512,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 3,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 64,
};

/** Steps each cohort schedules in the epoch network (a shortened epoch). */
export const EPOCH_STEPS = 2;
/** Retention and fresh documents of each cohort (genesis `data.evaluation_documents`): 2 scores per group. */
export const EPOCH_EVALUATION_DOCUMENTS = 8;

/** A running epoch network. */
export interface EpochNet {
  readonly dir: string;
  readonly rpc: string;
  readonly chain: ChainClient;
  /** The controller's home and its config file. */
  readonly home: string;
  readonly config: string;
  /** Every account of the network by role (`controller`, `worker-0` … `worker-2`). */
  readonly accounts: Record<string, string>;
  /** Stops worker `i` and (after `downMs`) starts it again with the same home and port. */
  bounceWorker(i: number, downMs?: number): Promise<void>;
  /** Stops the validator and (after `downMs`) starts it again with the same home and port. */
  bounceValidator(downMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Writes a template network (nothing started) into a new folder; its path. */
export async function buildEpochTemplate(
  options: { daily?: { epochs: number; atoms: number } } = {},
): Promise<string> {
  const dir = Deno.makeTempDirSync({ prefix: "epoch-template-" });
  await Deno.mkdir(`${dir}/sources`);
  const { config } = await writeFixtureSources({}, `${dir}/sources`);
  const codec = fixtureCodec();
  const workerHomes = [0, 1, 2].map((i) => `${dir}/worker-${i}`);
  const model = initModel(EPOCH_MODEL, 5);
  let manifest: JsonValue = null;
  let root = "";
  for (const h of [...workerHomes, `${dir}/controller`]) {
    const out = await storeModel(new ObjectStore(`${h}/objects`), model, {
      origin: { kind: "init", seed: 5 } as JsonValue,
      tokenizer_root: codec.root,
    });
    manifest = out.manifest as unknown as JsonValue;
    root = out.root;
  }
  // Every key is made here, so every copy of the template signs the same transactions.
  for (const h of workerHomes) await createKeyFile(`${h}/account.key`);
  const controller = await createKeyFile(`${dir}/controller/account.key`);
  await storeCodec(new ObjectStore(`${dir}/controller/objects`), codec);
  const net = await writeDevnetGenesis({
    out: `${dir}/net`,
    validators: 1,
    time: 1_767_225_600_000,
    blockIntervalMs: 150,
    accounts: [{ id: controller.accountId, balance: 1_000 * ATOMS_PER_NEURO }],
    model: { manifest, root: sha256Hex(canonicalBytes(manifest)) },
    codec: { root: codec.root, manifest: codec.manifest as unknown as JsonObject },
    training: { learning_rate: toHexFloat(0.05), clip: toHexFloat(1), batches: [] },
    data: {
      sources: config.sources.map((s) => ({ ...s.spec })) as unknown as JsonValue[],
      cursors: Object.fromEntries(config.sources.map((s) => [s.spec.name, 0])),
      training_blocks: 10_000,
      // 8 retention and 8 fresh documents a cohort: an evaluation of 8 scores, not 32.
      evaluation_documents: EPOCH_EVALUATION_DOCUMENTS,
    },
    params: {
      // Generous deadlines (they cost nothing when met): a proposal's review and votes, a lease and a claim's
      // life of minutes, so a controller killed and restarted on a busy machine resumes its proposal,
      // reservation and claims in time and a crashed run makes the same attempts as an uninterrupted one
      // (with 400 blocks, 60 s, a step's lease and a proposal both expired under a load average of 35).
      proposal_blocks: 2_000,
      activation_blocks: 2,
      steps_per_cohort: EPOCH_STEPS,
      challenge_blocks: 6,
      min_inference_blocks: 7,
      lease_blocks: 2_000,
      max_claim_blocks: 4_000,
      evaluation_blocks: 100_000,
    },
  });
  if (root !== sha256Hex(canonicalBytes(manifest))) throw new Error("the model root is not its manifest's");
  const v0 = net.homes[0]!;
  await Deno.mkdir(`${v0}/sources`, { recursive: true });
  for await (const e of Deno.readDir(`${dir}/sources`)) {
    if (e.isFile) await Deno.copyFile(`${dir}/sources/${e.name}`, `${v0}/sources/${e.name}`);
  }
  await storeCodec(new ObjectStore(`${v0}/objects`), codec);
  await Deno.writeTextFile(
    `${v0}/policy.json`,
    JSON.stringify({ sources: "sources/sources.json", poll_ms: 200 }),
  );
  await Deno.writeTextFile(
    `${dir}/epoch.json`,
    JSON.stringify({
      genesis: "net/genesis.json",
      sources: "sources/sources.json",
      workers: "workers.json",
      // Fewer than the train source's 120 rows: an epoch collects part of it (the crash matrix kills between
      // two sources' collects, and the restart must not collect the next rows).
      collect_rows: 100,
      train_documents: 16,
      attempts: 6,
      epoch_atoms: 100 * ATOMS_PER_NEURO,
      daily: options.daily ?? { epochs: 1, atoms: 100 * ATOMS_PER_NEURO },
      growth: { blocks: 1 },
      poll_ms: 100,
    }),
  );
  return dir;
}

/** Copies folder `from` into `to` recursively. */
async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    else if (e.isFile) {
      await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
      await Deno.chmod(`${to}/${e.name}`, (await Deno.stat(`${from}/${e.name}`)).mode! & 0o777);
    }
  }
}

/** Copies the template at `template` and starts its validator and workers. */
export async function startEpochNet(template: string): Promise<EpochNet> {
  const dir = Deno.makeTempDirSync({ prefix: "epoch-net-" });
  await copyTree(template, dir);
  const v0 = `${dir}/net/validator-0`;
  const startValidator = (port?: number) =>
    startProc(v0, `${dir}/net/genesis.json`, {
      args: ["--review-policy", `${v0}/policy.json`],
      ...(port === undefined ? {} : { port }),
    });
  let validator: NodeProc = await startValidator();
  const workers: TaskProcess[] = [];
  // Room for one more block than the model has (on worker 1), so the epoch's growth of one block fits.
  const block = componentParameters(EPOCH_MODEL, "block_000");
  const caps = [
    componentParameters(EPOCH_MODEL, "embed") + componentParameters(EPOCH_MODEL, "norm") + block,
    2 * block,
    block,
  ];
  const entries = [];
  const accounts: Record<string, string> = {};
  try {
    for (let i = 0; i < 3; i++) {
      const w = await startTask("worker", ["--home", `${dir}/worker-${i}`]);
      workers.push(w);
      entries.push({ url: w.url, token_file: `worker-${i}/token`, capacity: caps[i]! });
      const account = w.lines.find((l) => l.startsWith("account "))?.split(" ")[1];
      if (account) accounts[`worker-${i}`] = account;
    }
  } catch (e) {
    for (const w of workers) await w.stop();
    await stopProc(validator);
    throw e;
  }
  await Deno.writeTextFile(`${dir}/workers.json`, JSON.stringify(entries));
  accounts.controller = (await loadKeyFile(`${dir}/controller/account.key`)).accountId;
  return {
    dir,
    rpc: validator.url,
    chain: new ChainClient(validator.url),
    home: `${dir}/controller`,
    config: `${dir}/epoch.json`,
    accounts,
    async bounceWorker(i, downMs = 1_000) {
      const port = new URL(workers[i]!.url).port;
      await workers[i]!.stop();
      await new Promise((r) => setTimeout(r, downMs));
      workers[i] = await startTask("worker", ["--home", `${dir}/worker-${i}`, "--port", port]);
    },
    async bounceValidator(downMs = 1_000) {
      const port = Number(new URL(validator.url).port);
      await stopProc(validator);
      await new Promise((r) => setTimeout(r, downMs));
      validator = await startValidator(port);
    },
    async close() {
      for (const w of workers) await w.stop();
      await stopProc(validator);
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

/** The outcome of one `deno task epoch` run. */
export interface EpochRun {
  readonly code: number;
  readonly signal: Deno.Signal | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `deno task epoch <args>` as a process with the task's own permissions (plus `env`'s test hooks). */
export function runEpoch(args: readonly string[], env: Record<string, string> = {}): Promise<EpochRun> {
  return spawnEpoch(args, env).done;
}

/** Starts `deno task epoch <args>` (as `runEpoch`); `done` resolves when it exits. */
export function spawnEpoch(
  args: readonly string[],
  env: Record<string, string> = {},
): { child: Deno.ChildProcess; done: Promise<EpochRun> } {
  const hooks = Object.keys(env);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      `--allow-env=${["NEURO_KERNELS", ...hooks].join(",")}`,
      "--allow-net=127.0.0.1",
      `${ROOT}tasks/epoch.ts`,
      ...args,
    ],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const done = child.output().then((o) => {
    const d = new TextDecoder();
    return { code: o.code, signal: o.signal, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) };
  });
  return { child, done };
}

/** `run` arguments for net `net`. */
export function runArgs(net: EpochNet, json = true): string[] {
  return ["--home", net.home, "--rpc", net.rpc, "--config", net.config, ...(json ? ["--json"] : [])];
}
