/**
 * Starts the devnet's processes: the proposer and the replicas following it (each reviewing data proposals
 * from its own copy of the sources and voting only on approve), the honest workers, the forging
 * worker (`--forge optimizer` while the scenario's training forges, `--forge score` for its evaluation), and
 * the referee; writes the workers files the sponsor, the evaluator and the referee read (URLs of this run,
 * token files, capacities that place the devnet model on 3 stages). The sponsor and the evaluator are started
 * by the scenario, phase by phase.
 */
import { PRESETS } from "../kernels/config.ts";
import { componentParameters } from "../kernels/model.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import type { Child, Supervisor } from "./supervisor.ts";

/** The running network. */
export interface Network {
  /** The proposer's RPC URL. */
  readonly rpc: string;
  /** Every validator's RPC URL, proposer first. */
  readonly urls: string[];
  readonly referee: Child;
  /** The honest pipeline: worker-0, worker-1, worker-2. */
  readonly workersFile: string;
  /** The forging pipeline: worker-0, the forger (stage 1), worker-2, then worker-1 unplaced. */
  readonly forgeWorkersFile: string | null;
  /** The evaluator's pool: worker-0, worker-1, the forger (when the scenario forges), worker-2. */
  readonly evaluateWorkersFile: string;
  /** The forger's URL (it keeps its port when it is restarted in another forge mode). */
  readonly forgerUrl: string | null;
}

/** What the forging worker forges: a training step's optimizer update, or a score's window losses. */
export type ForgerMode = "optimizer" | "score";

/** Starts (or restarts, on `port`) the forging worker in `mode`; its URL. */
export async function startForger(
  sup: Supervisor,
  layout: DevnetLayout,
  mode: ForgerMode,
  port = 0,
): Promise<string> {
  await sup.stop("forger");
  const child = await sup.start({
    name: "forger",
    task: "worker",
    args: ["--home", layout.forger, "--port", String(port), "--forge", mode],
  });
  return child.url!;
}

/** Capacities (parameters) that place the devnet model on 3 stages: embed+norm+block 0, blocks 1-2, block 3. */
export function devnetCapacities(): number[] {
  const c = PRESETS.devnet;
  const block = componentParameters(c, "block_000");
  return [componentParameters(c, "embed") + componentParameters(c, "norm") + block, 2 * block, block];
}

async function writeWorkers(path: string, homes: readonly string[], urls: readonly string[]): Promise<void> {
  const caps = devnetCapacities();
  const entries = homes.map((h, i) => ({
    url: urls[i]!,
    token_file: `${h}/token`,
    capacity: caps[i] ?? caps[2]!,
  }));
  await Deno.writeTextFile(path, JSON.stringify(entries, null, 2) + "\n");
}

/** A validator's arguments: its home, the genesis, and its operator's review policy (it reviews and votes). */
function validatorArgs(layout: DevnetLayout, i: number): string[] {
  const home = layout.validators[i]!;
  return ["--home", home, "--genesis", layout.genesisPath, "--review-policy", `${home}/review-policy.json`];
}

/**
 * Starts every process but the sponsor, each waited for until it listens (see the module comment). Under
 * `engine` cometbft every validator runs `--engine cometbft` (no proposer and followers; validator-0's RPC is
 * the one the actors use).
 */
export async function startNetwork(
  sup: Supervisor,
  layout: DevnetLayout,
  forger: ForgerMode | null,
  say: (line: string) => void,
  engine: "embedded" | "cometbft" = "embedded",
): Promise<Network> {
  const dir = layout.dir;
  const comet = engine === "cometbft" ? ["--engine", "cometbft"] : [];
  const v0 = await sup.start({
    name: "validator-0",
    task: "validator",
    args: [...validatorArgs(layout, 0), ...comet],
  });
  // The replicas (which follow validator-0), the workers and the forger start side by side: each process's
  // start-up is mostly its own, and waiting for them one by one cost seconds on every run.
  const replicas = layout.validators.slice(1).map((_, k) =>
    sup.start({
      name: `validator-${k + 1}`,
      task: "validator",
      args: [...validatorArgs(layout, k + 1), ...(engine === "cometbft" ? comet : ["--follow", v0.url!])],
    })
  );
  const workers = layout.workers.map((home, i) =>
    sup.start({ name: `worker-${i}`, task: "worker", args: ["--home", home] })
  );
  const forging = forger === null ? Promise.resolve(null) : startForger(sup, layout, forger);
  const [started, workerChildren, forgerUrl] = await Promise.all([
    Promise.all(replicas),
    Promise.all(workers),
    forging,
  ]);
  const urls = [v0.url!, ...started.map((v) => v.url!)];
  const rpc = v0.url!;
  say(`validators ${urls.join(" ")}`);
  const workerUrls = workerChildren.map((w) => w.url!);
  await writeWorkers(`${dir}/workers.json`, layout.workers, workerUrls);
  const refereeHomes = forgerUrl ? [...layout.workers, layout.forger] : layout.workers;
  const refereeUrls = forgerUrl ? [...workerUrls, forgerUrl] : workerUrls;
  await writeWorkers(`${dir}/referee-workers.json`, refereeHomes, refereeUrls);
  if (forgerUrl) {
    // The evaluator starts group k on worker k (candidate retention on the third): the forger there computes
    // the head of the first score the evaluator submits, so the referee checks the forged score first.
    const pool = [layout.workers[0]!, layout.workers[1]!, layout.forger, layout.workers[2]!];
    await writeWorkers(`${dir}/workers-evaluate.json`, pool, [
      workerUrls[0]!,
      workerUrls[1]!,
      forgerUrl,
      workerUrls[2]!,
    ]);
  } else await writeWorkers(`${dir}/workers-evaluate.json`, layout.workers, workerUrls);
  if (forgerUrl) {
    // Stage 1 is the forger's; worker-1 stays in the file (unplaced) so the forger can copy its components.
    const forge = [layout.workers[0]!, layout.forger, layout.workers[2]!, layout.workers[1]!];
    const urls = [workerUrls[0]!, forgerUrl, workerUrls[2]!, workerUrls[1]!];
    await writeWorkers(`${dir}/workers-forge.json`, forge, urls);
  }
  say(`workers ${workerUrls.join(" ")}${forgerUrl ? `, forger ${forgerUrl}` : ""}`);
  const referee = await sup.start({
    name: "referee",
    task: "referee",
    listens: false,
    args: ["--home", layout.referee, "--rpc", rpc, "--workers", `${dir}/referee-workers.json`, "--json"],
  });
  return {
    rpc,
    urls,
    referee,
    workersFile: `${dir}/workers.json`,
    forgeWorkersFile: forgerUrl ? `${dir}/workers-forge.json` : null,
    evaluateWorkersFile: `${dir}/workers-evaluate.json`,
    forgerUrl,
  };
}
