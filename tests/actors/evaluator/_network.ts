/**
 * A data-lifecycle network for evaluator tests, all real processes on 127.0.0.1: one validator over a
 * genesis with the wide-vocabulary tiny model and the test sources of `tests/ledger/data/_cohort.ts`, three
 * workers (`deno task worker`, the last one optionally forging), homes for a sponsor, an evaluator and a
 * referee (funded in genesis). `trainCohort` proposes a test cohort, votes it in with the validator's owner
 * key, and runs `deno task sponsor` for its one scheduled step, so the latest cohort is trained. Everything is
 * removed by `close`.
 */
import { canonical, type JsonObject, type JsonValue, parseJson } from "../../../core/canonical.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import { ChainClient } from "../../../actors/common/chain.ts";
import { openHome } from "../../../actors/common/home.ts";
import { submitSettled } from "../../../actors/common/publish.ts";
import { Submitter } from "../../../actors/runtime/submit.ts";
import { writeDevnetGenesis } from "../../../genesis/ledger_devnet.ts";
import { ATOMS_PER_NEURO } from "../../../workflows/params.ts";
import { startProc, stopProc, until } from "../../e2e/_ledger_procs.ts";
import { SOURCES, testCohort } from "../../ledger/data/_cohort.ts";
import { capacities, runSponsor } from "../sponsor/_network.ts";
import { type Fixture, tinyFixture, WIDE_VOCAB } from "../worker/_fixture.ts";
import { startTask, type TaskProcess } from "../worker/_process.ts";

/** A running evaluation network. */
export interface EvaluationNetwork {
  readonly dir: string;
  readonly rpc: string;
  readonly chain: ChainClient;
  readonly fixture: Fixture;
  readonly workers: TaskProcess[];
  readonly workersFile: string;
  readonly homes: { sponsor: string; evaluator: string; referee: string; owner: string };
  /** Restarts worker `i` (after a crash, or to arm a crash point), with the same home and port. */
  restartWorker(i: number, env?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** Starts the network; `forge` is the third worker's `--forge` mode. */
export async function startEvaluationNetwork(options: { forge?: string } = {}): Promise<EvaluationNetwork> {
  const dir = Deno.makeTempDirSync({ prefix: "evaluation-net-" });
  const workerHomes = [0, 1, 2].map((i) => `${dir}/worker-${i}`);
  const homes = { sponsor: `${dir}/sponsor`, evaluator: `${dir}/evaluator`, referee: `${dir}/referee` };
  const ids: Record<string, string> = {};
  for (const [name, h] of Object.entries(homes)) {
    const home = await openHome(h);
    ids[name] = home.key.accountId;
    home.journal.close();
  }
  const fixture = await tinyFixture(
    [...workerHomes, homes.referee].map((h) => `${h}/objects`),
    3,
    WIDE_VOCAB,
  );
  const { genesisPath, homes: validatorHomes } = await writeDevnetGenesis({
    // Not beside the homes: the sponsor's workflow journal does not follow cohort chains yet, so it runs
    // without it (the training claim itself is checked by the ledger as always).
    out: `${dir}/chain`,
    chainId: "neuroshard-evaluation-test",
    validators: 1,
    blockIntervalMs: 150,
    model: { manifest: fixture.manifest as unknown as JsonValue, root: fixture.root },
    training: { learning_rate: toHexFloat(0.05), clip: toHexFloat(1), batches: [] },
    data: {
      sources: SOURCES as unknown as JsonObject[],
      cursors: { "chat-retention": 0, "chat-train": 0 },
      training_blocks: 400,
    },
    accounts: [
      { id: ids.sponsor!, balance: 200 * ATOMS_PER_NEURO },
      { id: ids.evaluator!, balance: 200 * ATOMS_PER_NEURO },
      { id: ids.referee!, balance: 50 * ATOMS_PER_NEURO },
    ],
  });
  const genesis = parseJson(await Deno.readTextFile(genesisPath)) as { params: Record<string, number> };
  // A wider challenge window than DEVNET_PARAMS' 6 blocks (6 s at 150 ms blocks), so a referee on a loaded
  // machine still checks the forged one of four scores the evaluator submits in one block.
  genesis.params.challenge_blocks = 40;
  genesis.params.min_inference_blocks = 41;
  genesis.params.steps_per_cohort = 1;
  genesis.params.activation_blocks = 2;
  await Deno.writeTextFile(genesisPath, canonical(genesis as unknown as JsonValue) + "\n");
  const validator = await startProc(validatorHomes[0]!, genesisPath);
  const caps = capacities(3, WIDE_VOCAB);
  const workers: TaskProcess[] = [];
  const entries = [];
  for (let i = 0; i < 3; i++) {
    const forge = i === 2 ? options.forge : undefined;
    const w = await startTask("worker", ["--home", workerHomes[i]!, ...(forge ? ["--forge", forge] : [])]);
    workers.push(w);
    entries.push({ url: w.url, token_file: `${workerHomes[i]}/token`, capacity: caps[i]! });
  }
  const workersFile = `${dir}/workers.json`;
  await Deno.writeTextFile(workersFile, JSON.stringify(entries));
  return {
    dir,
    rpc: validator.url,
    chain: new ChainClient(validator.url),
    fixture,
    workers,
    workersFile,
    homes: { ...homes, owner: validatorHomes[0]! },
    async restartWorker(i, env = {}) {
      const port = new URL(workers[i]!.url).port;
      await workers[i]!.stop();
      const forge = i === 2 ? options.forge : undefined;
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

async function submit(
  net: EvaluationNetwork,
  homeDir: string,
  intent: string,
  kind: string,
  fields: JsonObject,
) {
  const home = await openHome(homeDir);
  try {
    const submitter = new Submitter(home.journal, net.chain.http, { confirmMs: 30_000, pollMs: 100 });
    const s = await submitSettled(submitter, intent, () => net.chain.sign(home.key, kind as never, fields));
    if (s.status !== "committed") throw new Error(`${kind} refused: ${s.code} ${s.message}`);
    return s;
  } finally {
    home.journal.close();
  }
}

/** Proposes, votes in and trains (one step, by `deno task sponsor`) a test cohort. */
export async function trainCohort(net: EvaluationNetwork): Promise<void> {
  const lc = await net.chain.lifecycle();
  const cohort = testCohort({
    previous: lc.data!.data_root,
    tokenizer_root: net.fixture.manifest.tokenizer_root,
    cursors: lc.data!.cursors,
    salt: "evaluator",
  });
  await submit(net, net.homes.sponsor, "propose", "propose_data", {
    data_root: cohort.root,
    metadata: cohort.metadata,
  });
  const proposal = await net.chain.dataProposal();
  await submit(net, net.homes.owner, "vote", "vote_data", {
    proposal_id: proposal!.proposal_id,
    approve: true,
  });
  await until(
    "the cohort is active",
    async () => (await net.chain.lifecycle()).data?.cohort?.data_root === cohort.root,
  );
  const r = await runSponsor(
    { rpc: net.rpc, workersFile: net.workersFile, sponsorHome: net.homes.sponsor } as never,
    ["--steps", "1"],
  );
  if (r.code !== 0) throw new Error(`sponsor failed: ${r.stdout}${r.stderr}`);
  await until(
    "the cohort is trained",
    async () => (await net.chain.lifecycle()).data?.cohort?.status === "trained",
  );
}
