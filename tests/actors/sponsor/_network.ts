/**
 * A small training network for actor tests, all real processes on 127.0.0.1: one validator (`deno task
 * validator`) over a genesis with the tiny model and three training batches, `n` workers (`deno task
 * worker`, optionally forging), and homes for a sponsor and a referee (funded in genesis). Everything is
 * removed by `close`.
 */
import { canonical, type JsonValue, parseJson } from "../../../core/canonical.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import { openHome } from "../../../actors/common/home.ts";
import { writeDevnetGenesis } from "../../../genesis/ledger_devnet.ts";
import assert from "node:assert/strict";
import { ChainClient } from "../../../actors/common/chain.ts";
import { place } from "../../../kernels/placement.ts";
import { trainStep } from "../../../kernels/step.ts";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../../workflows/params.ts";
import { startProc, stopProc } from "../../e2e/_ledger_procs.ts";
import { type Fixture, TINY, tinyBatch, tinyFixture } from "../worker/_fixture.ts";
import { startTask, type TaskProcess } from "../worker/_process.ts";
import { componentParameters } from "../../../kernels/model.ts";
import type { ModelConfig } from "../../../kernels/config.ts";

/** The batches of the test genesis, `training_batches[round mod 3]`. */
export const BATCHES = [tinyBatch(0), tinyBatch(1), tinyBatch(2)];

/** A running test network. */
export interface Network {
  readonly dir: string;
  readonly rpc: string;
  readonly fixture: Fixture;
  readonly genesisPath: string;
  readonly workerHomes: string[];
  readonly workers: TaskProcess[];
  readonly workersFile: string;
  readonly sponsorHome: string;
  /** Homes of the extra sponsors. */
  readonly extraSponsorHomes: string[];
  readonly refereeHome: string;
  readonly accounts: { sponsor: string; referee: string; workers: string[]; extraSponsors: string[] };
  /** Restarts worker `i` (after a crash), with the same home and port. */
  restartWorker(i: number, env?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** Capacities that place the tiny model on `n` workers (stage 0: embed, norm and 4 - n blocks). */
export function capacities(n: number, config: ModelConfig = TINY): number[] {
  const block = componentParameters(config, "block_000");
  const head = componentParameters(config, "embed") + componentParameters(config, "norm");
  return Array.from({ length: n }, (_, i) => (i === 0 ? head + block * (4 - n) : block));
}

/** Starts the network. */
export async function startNetwork(
  options: {
    workers?: number;
    forge?: (string | null)[];
    intervalMs?: number;
    /** The model (default the tiny one). */
    config?: ModelConfig;
    /** Blocks of the challenge window (default 12). */
    challengeBlocks?: number;
    /** Blocks a live challenge has for its uploads and resolve (default the devnet's 20). */
    availabilityBlocks?: number;
    /** Extra funded sponsor homes (`sponsor-1`, ...), for tests where sponsors compete. */
    extraSponsors?: number;
    /** Each worker's capacity (default `capacities(workers, config)`). */
    capacities?: number[];
    /** Environment of each worker's first process (e.g. `NEURO_CRASH_AT`). */
    workerEnv?: (Record<string, string> | undefined)[];
  } = {},
): Promise<Network> {
  const n = options.workers ?? 2;
  const dir = Deno.makeTempDirSync({ prefix: "actors-net-" });
  const workerHomes = Array.from({ length: n }, (_, i) => `${dir}/worker-${i}`);
  const sponsorHome = `${dir}/sponsor`, refereeHome = `${dir}/referee`;
  const ids: string[] = [];
  for (const h of [...workerHomes, sponsorHome, refereeHome]) {
    const home = await openHome(h);
    ids.push(home.key.accountId);
    home.journal.close();
  }
  const extraHomes = Array.from({ length: options.extraSponsors ?? 0 }, (_, i) => `${dir}/sponsor-${i + 1}`);
  const extraIds: string[] = [];
  for (const h of extraHomes) {
    const home = await openHome(h);
    extraIds.push(home.key.accountId);
    home.journal.close();
  }
  const fixture = await tinyFixture(workerHomes.map((h) => `${h}/objects`), 3, options.config);
  const { genesisPath, homes } = await writeDevnetGenesis({
    out: `${dir}/net`,
    chainId: "neuroshard-actors-test",
    validators: 1,
    blockIntervalMs: options.intervalMs ?? 150,
    model: { manifest: fixture.manifest as unknown as JsonValue, root: fixture.root },
    training: {
      learning_rate: toHexFloat(0.05),
      clip: toHexFloat(1),
      batches: BATCHES as unknown as JsonValue[],
    },
    accounts: [
      { id: ids[n]!, balance: 200 * ATOMS_PER_NEURO },
      { id: ids[n + 1]!, balance: 50 * ATOMS_PER_NEURO },
      ...extraIds.map((id) => ({ id, balance: 200 * ATOMS_PER_NEURO })),
    ],
  });
  // A wider challenge window than the devnet's 6 blocks, so a referee on a loaded machine still makes it.
  const genesis = parseJson(await Deno.readTextFile(genesisPath)) as { params: Record<string, number> };
  genesis.params.challenge_blocks = options.challengeBlocks ?? 12;
  // A challenge's uploads get as many blocks as the window unless told (a wide window is for a slow, loaded
  // machine), and a claim lives long enough for a few such windows in a row (availability challenges reopen it).
  genesis.params.availability_blocks = options.availabilityBlocks ??
    Math.max(genesis.params.availability_blocks!, genesis.params.challenge_blocks);
  genesis.params.max_claim_blocks = Math.max(
    genesis.params.max_claim_blocks!,
    3 * (genesis.params.challenge_blocks + genesis.params.availability_blocks),
  );
  genesis.params.min_inference_blocks = Math.max(
    genesis.params.min_inference_blocks!,
    genesis.params.challenge_blocks + 1,
  );
  genesis.params.max_inference_blocks = Math.max(
    genesis.params.max_inference_blocks!,
    genesis.params.min_inference_blocks,
  );
  await Deno.writeTextFile(genesisPath, canonical(genesis as unknown as JsonValue) + "\n");
  const validator = await startProc(homes[0]!, genesisPath);
  const workers: TaskProcess[] = [];
  const caps = options.capacities ?? capacities(n, options.config);
  const entries = [];
  for (let i = 0; i < n; i++) {
    const forge = options.forge?.[i];
    const w = await startTask("worker", ["--home", workerHomes[i]!, ...(forge ? ["--forge", forge] : [])], {
      env: options.workerEnv?.[i] ?? {},
    });
    workers.push(w);
    entries.push({ url: w.url, token_file: `${workerHomes[i]}/token`, capacity: caps[i]! });
  }
  const workersFile = `${dir}/workers.json`;
  await Deno.writeTextFile(workersFile, JSON.stringify(entries));
  return {
    dir,
    rpc: validator.url,
    fixture,
    genesisPath,
    workerHomes,
    workers,
    workersFile,
    sponsorHome,
    extraSponsorHomes: extraHomes,
    refereeHome,
    accounts: { sponsor: ids[n]!, referee: ids[n + 1]!, workers: ids.slice(0, n), extraSponsors: extraIds },
    async restartWorker(i, env = {}) {
      const port = new URL(workers[i]!.url).port;
      const forge = options.forge?.[i];
      workers[i] = await startTask(
        "worker",
        ["--home", workerHomes[i]!, "--port", port, ...(forge ? ["--forge", forge] : [])],
        { env },
      );
    },
    async close() {
      for (const w of workers) await w.stop();
      await stopProc(validator);
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

/** Runs `deno task sponsor` to its end (or its crash). */
export async function runSponsor(
  net: Network,
  args: string[],
  env: Record<string, string> = {},
  home: string = net.sponsorHome,
): Promise<{ code: number; signal: Deno.Signal | null; stdout: string; stderr: string }> {
  const root = new URL("../../../", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      `${root}tasks/sponsor.ts`,
      "--home",
      home,
      "--rpc",
      net.rpc,
      "--workers",
      net.workersFile,
      "--poll-ms",
      "100",
      ...args,
    ],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    signal: out.signal,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/**
 * Asserts the first step of the network settled exactly once: round 1, the learning root of the reference
 * step, 400,000 atoms to each worker, the sponsor's nonce 2 and two fees spent, one attempt charged.
 */
export async function assertFirstStepPaidOnce(net: Network): Promise<void> {
  const chain = new ChainClient(net.rpc);
  const f = net.fixture;
  const ref = trainStep({
    model: f.model,
    manifest: f.manifest,
    batch: BATCHES[0]!,
    partitions: place(TINY, capacities(2)),
    learningRate: 0.05,
    clip: 1,
    step: 0,
  });
  const lc = await chain.lifecycle();
  assert.equal(lc.training_round, 1);
  assert.equal(lc.learning_root, ref.candidateRoot);
  for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 400_000);
  const sp = await chain.account(net.accounts.sponsor);
  assert.equal(sp.nonce, 2);
  assert.equal(sp.balance, 200 * ATOMS_PER_NEURO - 2 * DEVNET_PARAMS.fee);
  const budget = JSON.parse(await Deno.readTextFile(`${net.sponsorHome}/budget.json`));
  assert.equal(budget.attempts.length, 1);
  assert.equal(budget.attempts[0].end.outcome, "settled");
}
