/**
 * The devnet scenario: builds the devnet if needed, starts 4 validators (a proposer and 3 replicas, each
 * reviewing data proposals by its operator's policy), 3 honest workers, a forging worker, a referee, and the
 * sponsor and the evaluator as separate processes, and drives the phases of `scenario_journal.ts`: the
 * Curator collects the pinned sources and proposes a cohort, which the validators review and vote in
 * (`cohort_phase.ts`); then the sponsor trains the first honest steps of its schedule; then it runs one step
 * with the forger (`--forge optimizer`) in stage 1 (the referee replays it, challenges, uploads, seals and
 * resolves, and the chain rejects it with the slash); then it trains the rest of the schedule; then the
 * Evaluator scores the cohort's candidate against the serving root with the forger (now `--forge score`) in
 * its pool, the referee gets the forged score rejected, and the ledger's gate decides
 * (`evaluation_phase.ts`); then the paid-inference phase of `inference_phase.ts` gives the providers the
 * serving model and buys answers from a Provider and from one with `--forge token`, which the referee gets
 * refuted. The sponsor is told how many settled steps to reach and exits when they are; which workers it
 * uses is the only thing the phase changes.
 *
 * Every phase change is journaled before it is acted on, and the rest is read from the chain, so running it
 * again after a SIGKILL at any moment ends in the same final state.
 */
import { isObject, type JsonObject, parseJson } from "../core/canonical.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { type DevnetLayout, ensureDevnet } from "../genesis/devnet_builder.ts";
import { ChainView } from "./chain_view.ts";
import { loadScenario, saveScenario, type Scenario, scenarioFor, targetSteps } from "./scenario_journal.ts";
import { collectSummary, type DevnetSummary } from "./summary.ts";
import { admitCohort } from "./cohort_phase.ts";
import { type ForgerMode, startForger, startNetwork } from "./network.ts";
import { hasEvaluatorHome, runEvaluationPhase } from "./evaluation_phase.ts";
import { provideServingModel } from "./serve_model.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { hasInferenceHomes, runInferencePhase } from "./inference_phase.ts";
import type { Child, Supervisor } from "./supervisor.ts";

/** How to run the scenario. */
export interface ScenarioOptions {
  readonly dir: string;
  readonly steps: number;
  readonly forge: boolean;
  /** Progress lines for a person. */
  readonly say: (line: string) => void;
  /** Aborted on SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** The consensus engine of the validators (default embedded). */
  readonly engine?: "embedded" | "cometbft";
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

function aborted(signal: AbortSignal): void {
  if (!signal.aborted) return;
  const why = signal.reason instanceof Error ? signal.reason.message : "interrupted";
  throw new Error(`Cannot finish the devnet scenario: ${why}`);
}

function decimal(hex: string): string {
  try {
    return fromHexFloat(hex).toFixed(4);
  } catch {
    return hex;
  }
}

/** Formats a sponsor or referee JSON line as a progress line; null for lines not worth showing. */
export function progressLine(role: string, line: string, scenario: Scenario): string | null {
  let e: JsonObject;
  try {
    const v = parseJson(line);
    if (!isObject(v)) return null;
    e = v;
  } catch {
    return line.startsWith("error") ? `${role}: ${line}` : null;
  }
  if (role === "sponsor" && e.event === "step") {
    const loss = typeof e.loss === "string" ? ` loss=${decimal(e.loss)}` : "";
    const step = typeof e.step === "number" && e.step >= 0 ? `step ${e.step + 1}` : "step ?";
    return `[${scenario.phase}] ${step} ${e.phase} height=${e.height}${loss}`;
  }
  if (
    role === "referee" && typeof e.event === "string" && !["status", "claim", "account"].includes(e.event)
  ) {
    if (e.event === "verdict" && String(e.detail).startsWith("match")) return null;
    const stage = e.stage === null || e.stage === undefined ? "" : ` stage ${e.stage}`;
    return `[${scenario.phase}] referee ${e.event} ${String(e.claim_id).slice(0, 12)}${stage}: ${e.detail}`;
  }
  return null;
}

/** Runs the scenario to its end (or resumes it) and returns the summary read from the chain. */
export async function runScenario(
  sup: Supervisor,
  layout: DevnetLayout,
  options: ScenarioOptions,
): Promise<DevnetSummary> {
  const { say, signal } = options;
  const dir = layout.dir;
  const cohortSteps = await genesisCohortSteps(layout);
  let scenario = await loadScenario(dir);
  if (scenario === null) {
    if (options.steps !== cohortSteps) {
      say(
        `this devnet was built with ${cohortSteps} steps per cohort: training ${cohortSteps} (--reset to rebuild)`,
      );
    }
    scenario = scenarioFor(cohortSteps, options.forge);
    await saveScenario(dir, scenario);
  } else if (scenario.steps + scenario.after !== options.steps || scenario.forge !== options.forge) {
    say(
      `resuming the scenario as first started: ${scenario.steps + scenario.after} steps${
        scenario.forge ? " and the forge" : ""
      }`,
    );
  }
  say(`scenario phase ${scenario.phase}`);
  const watch = (role: string) => (line: string) => {
    const p = progressLine(role, line, scenario!);
    if (p !== null) say(p);
  };

  const engine = options.engine ?? "embedded";
  // A devnet built before the evaluation phase has no Evaluator home, or schedules more steps than it trains.
  const evaluates = await hasEvaluatorHome(layout) && scenario.steps + scenario.after === cohortSteps;
  const forgerMode = (phase: Scenario["phase"]): ForgerMode | null =>
    !scenario!.forge ? null : phase === "evaluate" || phase === "done" ? "score" : "optimizer";
  let forger = forgerMode(scenario.phase);
  const net = await startNetwork(sup, layout, forger, say, engine);
  const { rpc } = net;
  const chain = new ChainView(rpc);
  net.referee.onLine(watch("referee"));
  const budget = String(2 * (scenario.steps + scenario.after + 1) + 2);

  const sponsor = async (workersFile: string, steps: number): Promise<Child> => {
    const child = await sup.start({
      name: "sponsor",
      task: "sponsor",
      listens: false,
      expectsExit: true,
      args: [
        "--home",
        layout.sponsor,
        "--rpc",
        rpc,
        "--workers",
        workersFile,
        "--steps",
        String(steps),
        "--budget",
        budget,
        "--json",
      ],
    });
    child.onLine(watch("sponsor"));
    return child;
  };
  const untilExit = async (child: Child): Promise<void> => {
    const code = await Promise.race([
      child.exited,
      new Promise<number>((r) => signal.addEventListener("abort", () => r(-1))),
    ]);
    aborted(signal);
    if (code !== 0) {
      throw new Error(
        `Cannot finish the devnet scenario: the sponsor exited with ${code}:\n${
          child.tail.slice(-15).join("\n")
        }`,
      );
    }
  };
  const journal = async (next: Scenario) => {
    await saveScenario(dir, next);
    scenario = next;
    say(`scenario phase ${next.phase}`);
  };

  while (scenario.phase !== "done") {
    aborted(signal);
    if (scenario.phase === "cohort") {
      await admitCohort({ sup, layout, rpc, chain, say, signal });
      await journal({ ...scenario, phase: "honest" });
      continue;
    }
    if (scenario.phase === "honest" && scenario.steps === 0) {
      await journal({ ...scenario, phase: "forge", forge_from_height: (await chain.status()).height });
      continue;
    }
    if (scenario.phase === "honest" || scenario.phase === "after") {
      await untilExit(await sponsor(net.workersFile, targetSteps(scenario, scenario.phase)));
      if (scenario.phase === "after" || !scenario.forge) {
        await journal({ ...scenario, phase: evaluates ? "evaluate" : "done" });
      } else await journal({ ...scenario, phase: "forge", forge_from_height: (await chain.status()).height });
      continue;
    }
    if (scenario.phase === "evaluate") {
      if (net.forgerUrl !== null && forger !== "score") {
        // The forger computed the forged step with --forge optimizer; it forges a score from now on.
        await startForger(sup, layout, "score", Number(new URL(net.forgerUrl).port));
        forger = "score";
      }
      await runEvaluationPhase({ sup, layout, rpc, workersFile: net.evaluateWorkersFile, say, signal });
      await journal({ ...scenario, phase: "done" });
      continue;
    }
    // forge: the first claim committed after the forging pipeline was put in place is the forged one.
    const from = scenario.forge_from_height ?? 0;
    const forged = async () =>
      (await chain.claims((await chain.status()).height)).find((c) => c.height >= from);
    let claim = await forged();
    if (!claim) {
      const child = await sponsor(net.forgeWorkersFile!, targetSteps(scenario, "forge"));
      while (!(claim = await forged())) {
        aborted(signal);
        await sleep(250, signal);
      }
      await sup.stop(child.name);
    }
    say(`[forge] the forged claim ${claim.claim_id} is on the chain at height ${claim.height}`);
    await journal({ ...scenario, phase: "after", forge_claim: claim.claim_id });
  }

  // Quiescence: nothing reserved or claimed, the forged claim decided, then two more blocks so the verifier
  // reward of the last settlement is paid.
  for (;;) {
    aborted(signal);
    const lc = await chain.lifecycle();
    if (lc.assignment === null && lc.claim === null) {
      const h = lc.height;
      while ((await chain.status()).height < h + 2) await sleep(100, signal);
      break;
    }
    await sleep(250, signal);
  }
  if (!evaluates) say("this devnet was built before the evaluation phase: rebuild it with --reset to run it");
  if (await hasInferenceHomes(layout)) {
    // After a promotion the serving model is one only the workers hold: the providers need it to answer
    // and the referee to replay their answers, so each gets its objects first.
    const serving = (await chain.lifecycle()).serving_root!;
    const holders = [...layout.workers, layout.forger, layout.evaluator];
    for (const home of [layout.referee, layout.provider, layout.providerForger]) {
      await provideServingModel(new ChainClient(rpc), serving, home, holders);
    }
    await runInferencePhase(sup, layout, rpc, scenario.forge, say);
  } else {say(
      "this devnet was built before paid inference: rebuild it with --reset to run the inference phase",
    );}
  return { ...await collectSummary(layout, net.urls), engine };
}

/** The steps every cohort of the devnet's genesis schedules (`params.steps_per_cohort`). */
export async function genesisCohortSteps(layout: DevnetLayout): Promise<number> {
  const g = parseJson(await Deno.readTextFile(layout.genesisPath)) as {
    params?: { steps_per_cohort?: number };
  };
  return g.params?.steps_per_cohort ?? 0;
}

/** Builds the devnet if needed (its cohorts scheduling `steps` steps) and opens it. */
export async function prepareDevnet(
  dir: string,
  say: (line: string) => void,
  steps?: number,
): Promise<DevnetLayout> {
  const layout = await ensureDevnet({ dir, ...(steps === undefined ? {} : { stepsPerCohort: steps }) }, say);
  say(`${layout.built ? "built" : "using"} the devnet at ${layout.dir} (genesis ${layout.genesisId})`);
  return layout;
}

/** The summary as one JSON line (a report: losses are plain decimal numbers). */
export function summaryJson(s: DevnetSummary): string {
  return JSON.stringify(s);
}
