/** `deno task devnet`: build the devnet if needed, run whole epochs on it and print the summary. */
import { Supervisor } from "../devnet/supervisor.ts";
import { RunAbort } from "../devnet/run_abort.ts";
import { prepareDevnet, runScenario, summaryJson } from "../devnet/scenario.ts";
import { formatSummary } from "../devnet/summary.ts";
import { integerOption, parse, runTask, UsageError } from "./_cli.ts";
import { ProtocolError } from "../core/errors.ts";
import { installedTool } from "../ledger/abci/cometbft_pin.ts";
import { cometHomeOf, writeCometConfigs, writeCometHomes } from "../ledger/abci/comet_home.ts";
import { DEVNET_BUILD_PARAMS, type DevnetLayout } from "../genesis/devnet_builder.ts";
import { type Explorer, startExplorer } from "../explorer/server.ts";
import { StateSource } from "../explorer/state_source.ts";
import { runSmollm2Devnet, SMOLLM2_GGUF } from "./_devnet_smollm2.ts";

/** Scheduled steps of each devnet cohort unless `--steps` says otherwise (epoch 2 replays floor(4/4) = 1). */
const DEFAULT_STEPS = 4;
/** Whole epochs the devnet runs unless `--epochs` says otherwise. */
const DEFAULT_EPOCHS = 2;

const HELP =
  `deno task devnet [--epochs N] [--steps N] [--challenge-blocks N] [--no-forge] [--reset] [--json] [--dir DIR] [--explorer] [--engine E]

Build the devnet under DIR if it has no genesis yet (train the devnet tokenizer from the bundled generator,
initialise the devnet model, write the genesis with cohorts of N scheduled steps over the pinned sources,
and keys for 4 validators, 3 workers, a forging worker, a sponsor, a referee, an evaluator, a curator, two
providers and a client), then start every role as its own process (logs in DIR/logs/) and run whole epochs.
Epoch 1: the curator collects and proposes a cohort, the validators review it and vote it in; the sponsor
trains its N steps, one of them first computed by a worker started with --forge optimizer, which the referee
challenges and the chain rejects with the slash (the step is then trained again); the evaluator scores the
cohort's candidate against the serving root (8 retention and 8 fresh documents, each scored under both
models in score claims of 4 windows), one score computed by a worker started with --forge score, which
the referee gets rejected, and the ledger's integer gate decides whether the serving root moves. Then a client
buys paid answers, one from a provider started with --forge token, which the referee gets refuted. Epoch 2
(and every later one) admits another cohort, whose schedule replays a quarter of its steps from the previous
cohort, trains it and decides; each next cohort is proposed and voted during the last round of the
evaluation before it, and the paid answers run while epoch 2 trains. A line per phase shows the epoch, the
block height and the loss; the summary at the end shows each epoch (its cohort's votes and replay steps, every claim's loss and outcome, the
evaluation's S, Q, G and passed per group, the decision and the serving root after it), the paid answers,
everything rejected and why, the atoms issued and burned, every account's balance, whether the conservation
invariant holds over the final state, and whether all validators agree on the final app hash.

Run it again after it was killed at any moment: it resumes from the journals and the chain and ends in the
same final state. A finished devnet prints its summary again.

Options:
  --epochs N    whole epochs to run, 1 to 6 (the pinned sources hold 6 cohorts; default 2; a resumed
                scenario keeps its first value)
  --steps N     scheduled training steps of each cohort, 1 to 64 (default 4; fixed when the devnet is
                built: a built devnet keeps its value, --reset to change it)
  --challenge-blocks N
                a claim's challenge window in blocks of 250 ms, 8 to 400 (default 48, 12 s; fixed when the
                devnet is built like --steps). A referee must replay a forged claim within it: on a machine
                busy with other work give it more (the default test suite builds with 80, 20 s)
  --no-forge    no forged step, score or answer
  --reset       delete DIR first and build a new devnet
  --json        print the summary as one JSON object on stdout (progress goes to stderr): validators_agree,
                app_hash, height, epochs, inference, rejected, issued_atoms, burned_atoms, balances,
                conserved
  --dir DIR     where the devnet lives (default .neuroshard/devnet, or .neuroshard/devnet-cometbft)
  --engine E    embedded (default: one proposer, replicas that re-apply) or cometbft (the same scenario on
                four CometBFT validators, each with its own cometbft process; needs deno task
                cometbft:install; the summary says "engine":"cometbft")
  --model M     devnet (default: the small model above) or smollm2: the real SmolLM2-135M-Instruct
                (deno task model:fetch-smollm2 first) on 4 validators, 3 workers of 48M parameters
                and a fourth for growth, a forger, a sponsor and a referee: one honest paid step, one
                forged step refuted with the real uploads, a growth by 4 identity blocks, one paid
                step on the grown model, the final model's greedy answer and the same question
                bought through paid inference from the serving model; the summary shows step,
                replay, dispute and growth figures beside the reference's, each phase's wall time
                and each process's peak RSS (dir .neuroshard/devnet-smollm2; about 14 GB of memory at the peaks)
  --gguf FILE   with --model smollm2: the GGUF (default ${SMOLLM2_GGUF})
  --explorer    serve the explorer (read-only, on validator-0's state) beside the devnet, print its URL, and
                keep serving it after the scenario until Ctrl-C
  -h, --help    show this help`;

/**
 * Starts the explorer on `statePath` once validator-0 has created and initialised it (read-only, in this
 * process); null when the devnet is stopped first.
 */
async function startExplorerBeside(
  statePath: string,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<Explorer | null> {
  while (!signal.aborted) {
    // Only once validator-0 has its write-ahead log: a reader must not hold the file while it is being created.
    const ready = await Deno.stat(`${statePath}-wal`).then(() => true, () => false);
    if (ready) {
      try {
        const objects = statePath.replace(/state\.sqlite$/, "objects");
        const explorer = await startExplorer(StateSource.open(statePath), { port: 0, objects });
        say(`explorer on ${explorer.url}`);
        return explorer;
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e; // not initialised yet
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return null;
}

/** Gives every validator of the devnet a CometBFT home (once) and fresh loopback ports (every start). */
async function prepareComet(layout: DevnetLayout, say: (line: string) => void): Promise<void> {
  const first = `${cometHomeOf(layout.validators[0]!)}/config/genesis.json`;
  const exists = await Deno.stat(first).then(() => true, () => false);
  if (!exists) await writeCometHomes(layout.genesisPath, layout.validators);
  else await writeCometConfigs(layout.genesisPath, layout.validators);
  say(`cometbft homes ${exists ? "reused" : "written"} under ${layout.dir}/validator-*/cometbft`);
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    epochs: { type: "string" },
    steps: { type: "string" },
    "challenge-blocks": { type: "string" },
    "no-forge": { type: "boolean" },
    reset: { type: "boolean" },
    json: { type: "boolean" },
    dir: { type: "string" },
    explorer: { type: "boolean" },
    engine: { type: "string" },
    model: { type: "string" },
    gguf: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const model = values.model ?? "devnet";
  if (model !== "devnet" && model !== "smollm2") {
    throw new UsageError(`--model is ${model}, expected devnet or smollm2`);
  }
  if (model === "devnet" && values.gguf !== undefined) {
    throw new UsageError("--gguf goes with --model smollm2");
  }
  if (model === "smollm2") {
    for (const flag of ["steps", "challenge-blocks", "no-forge", "engine", "explorer"] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} does not go with --model smollm2`);
    }
    const dir = (values.dir ?? ".neuroshard/devnet-smollm2").replace(/\/+$/, "");
    const say = values.json ? (l: string) => console.error(l) : (l: string) => console.log(l);
    if (values.reset) {
      await Deno.remove(dir, { recursive: true }).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
    const signalled = await runSmollm2Devnet({
      dir,
      gguf: values.gguf ?? SMOLLM2_GGUF,
      json: !!values.json,
      say,
    });
    if (signalled) Deno.exit(signalled === "SIGINT" ? 130 : 143);
    return;
  }
  const steps = integerOption(values.steps, "steps", { fallback: DEFAULT_STEPS, max: 64 });
  const epochs = integerOption(values.epochs, "epochs", { fallback: DEFAULT_EPOCHS, max: 6 });
  const challengeBlocks = integerOption(values["challenge-blocks"], "challenge-blocks", {
    fallback: DEVNET_BUILD_PARAMS.challenge_blocks,
    min: 8,
    max: 400,
  });
  const engine = values.engine ?? "embedded";
  if (engine !== "embedded" && engine !== "cometbft") {
    throw new UsageError(`--engine is ${engine}, expected embedded or cometbft`);
  }
  if (engine === "cometbft" && !(await installedTool(new URL("../", import.meta.url).pathname, "cometbft"))) {
    throw new Error(
      "Cannot run the devnet on CometBFT: cometbft is not installed (run deno task cometbft:install)",
    );
  }
  const fallback = engine === "cometbft" ? ".neuroshard/devnet-cometbft" : ".neuroshard/devnet";
  const dir = (values.dir ?? fallback).replace(/\/+$/, "");
  const say = values.json ? (l: string) => console.error(l) : (l: string) => console.log(l);
  if (values.reset) {
    await Deno.remove(dir, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
  const layout = await prepareDevnet(dir, say, steps, challengeBlocks);
  if (engine === "cometbft") await prepareComet(layout, say);
  const sup = await Supervisor.open(layout.dir);
  const stop = new RunAbort(sup, say);
  say(`logs in ${sup.logs}/`);
  const explorer = values.explorer
    ? startExplorerBeside(`${layout.validators[0]}/state.sqlite`, say, stop.signal)
    : null;
  let failure: unknown = null;
  try {
    const { summary, detail } = await runScenario(sup, layout, {
      dir: layout.dir,
      epochs,
      steps,
      forge: !values["no-forge"],
      say,
      signal: stop.signal,
      engine,
    });
    if (values.json) console.log(summaryJson(summary));
    else console.log(formatSummary(summary, detail));
  } catch (e) {
    failure = e;
  } finally {
    await sup.stopAll();
    await sup.close();
    stop.dispose();
  }
  const served = await explorer;
  if (served && !stop.signalled && !failure) {
    say(`the explorer keeps serving ${served.url} (validator-0's final state); Ctrl-C to stop`);
    await new Promise<void>((resolve) => {
      Deno.addSignalListener("SIGINT", () => resolve());
      Deno.addSignalListener("SIGTERM", () => resolve());
    });
    await served.close();
    return;
  }
  await served?.close();
  if (stop.signalled) {
    say(`stopped by ${stop.signalled}; every process was stopped; run deno task devnet again to resume`);
    Deno.exit(stop.signalled === "SIGINT" ? 130 : 143);
  }
  if (failure) throw failure;
}

if (import.meta.main) await runTask("devnet", main);
