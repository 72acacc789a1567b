/**
 * The devnet scenario: builds the devnet if needed, starts 4 validators (a proposer and 3 replicas, each
 * reviewing data proposals by its operator's policy), 3 honest workers, a forging worker and a referee, and
 * runs whole epochs (`runEpoch`, one function of the epoch and the journaled scenario), each driving the
 * sponsor, the curator and the evaluator as processes of their own:
 *
 * 1. the Curator collects the pinned sources and proposes a cohort, which the validators review and vote in
 *    (`cohort_phase.ts`); from epoch 2 on the schedule replays a quarter of its steps from the previous cohort;
 * 2. the sponsor trains the schedule; in epoch 1 of a forging scenario one step is first computed with the
 *    forger (`--forge optimizer`) in stage 1, the referee challenges and the chain rejects it with the slash,
 *    and the step is trained again;
 * 3. the Evaluator scores the cohort's candidate against the serving root (`evaluation_phase.ts`); in epoch 1
 *    the forger, now `--forge score`, is in its pool and the referee gets its score rejected; the ledger's gate
 *    decides.
 *
 * After epoch 1 comes the paid-inference phase (`inference_phase.ts`): the providers and the referee get the
 * serving model, a client buys answers from a Provider and, forging, from one with `--forge token`, which the
 * referee gets refuted. The sponsor is told how many settled steps to reach (over every epoch) and exits when
 * they are; which workers it uses is the only thing the phase changes.
 *
 * Every phase change is journaled before it is acted on (`scenario_journal.ts`), and the rest is read from
 * the chain, so running it again after a SIGKILL at any moment ends in the same final state.
 */
import { isObject, type JsonObject, parseJson } from "../core/canonical.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { type DevnetLayout, ensureDevnet } from "../genesis/devnet_builder.ts";
import { ChainView } from "./chain_view.ts";
import {
  afterEvaluation,
  epochSplit,
  forgesNow,
  loadScenario,
  newScenario,
  saveScenario,
  type Scenario,
  sponsorBudget,
  targetSteps,
} from "./scenario_journal.ts";
import { collectSummary, type DevnetSummary, type SummaryDetail } from "./summary.ts";
import { admitCohort, proposeCohort } from "./cohort_phase.ts";
import { type ForgerMode, type Network, startForger, startNetwork } from "./network.ts";
import { hasInferenceHomes, loadInferenceJobs, payAnswers } from "./inference_phase.ts";
import { hasEvaluatorHome, runEvaluationPhase } from "./evaluation_phase.ts";
import { provideServingModel } from "./serve_model.ts";
import type { Child, Supervisor } from "./supervisor.ts";
import { sponsorSpec } from "./sponsor_spec.ts";

/** How to run the scenario. */
export interface ScenarioOptions {
  readonly dir: string;
  /** Epochs to run (a resumed scenario keeps its first value). */
  readonly epochs: number;
  /** Scheduled steps of each cohort asked for (the built genesis decides). */
  readonly steps: number;
  readonly forge: boolean;
  /** Progress lines for a person. */
  readonly say: (line: string) => void;
  /** Aborted on SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** The consensus engine of the validators (default embedded). */
  readonly engine?: "embedded" | "cometbft";
}

/** What every phase of an epoch runs with: the running network and the journaled scenario. */
export interface DevnetRun {
  readonly sup: Supervisor;
  readonly layout: DevnetLayout;
  readonly net: Network;
  readonly chain: ChainView;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
  /** The journaled scenario as it stands. */
  scenario(): Scenario;
  /** Journals the next phase (durably) before it is acted on. */
  journal(next: Scenario): Promise<void>;
  /** The forging worker's current mode (null when it does not run). */
  forger: ForgerMode | null;
  /** The paid answers still followed in the background while epoch 2 trains (null when none are). */
  answers: Promise<void> | null;
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

/** The phase label of progress lines: `[e2 honest]`, or `[honest]` in a one-epoch scenario. */
export function phaseLabel(s: Scenario): string {
  return s.epochs === 1 ? `[${s.phase}]` : `[e${s.epoch} ${s.phase}]`;
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
  const label = phaseLabel(scenario);
  if (role === "sponsor" && e.event === "step") {
    const loss = typeof e.loss === "string" ? ` loss=${decimal(e.loss)}` : "";
    const step = typeof e.step === "number" && e.step >= 0 ? `step ${e.step + 1}` : "step ?";
    return `${label} ${step} ${e.phase} height=${e.height}${loss}`;
  }
  if (
    role === "referee" && typeof e.event === "string" && !["status", "claim", "account"].includes(e.event)
  ) {
    if (e.event === "verdict" && String(e.detail).startsWith("match")) return null;
    if (e.event === "progress") return null;
    const stage = e.stage === null || e.stage === undefined ? "" : ` stage ${e.stage}`;
    return `${label} referee ${e.event} ${String(e.claim_id).slice(0, 12)}${stage}: ${e.detail}`;
  }
  return null;
}

async function untilExit(run: DevnetRun, child: Child, what: string): Promise<void> {
  const code = await Promise.race([
    child.exited,
    new Promise<number>((r) => run.signal.addEventListener("abort", () => r(-1), { once: true })),
  ]);
  aborted(run.signal);
  if (code !== 0) {
    throw new Error(
      `Cannot finish the devnet scenario: the ${what} exited with ${code}:\n${
        child.tail.slice(-15).join("\n")
      }`,
    );
  }
}

/** Starts the sponsor toward `steps` settled steps (over every epoch) on the workers of `workersFile`. */
async function sponsor(run: DevnetRun, workersFile: string, steps: number): Promise<Child> {
  const child = await run.sup.start(sponsorSpec({
    home: run.layout.sponsor,
    rpc: run.net.rpc,
    workers: workersFile,
    budget: sponsorBudget(run.scenario()),
    // A block every 250 ms: polling the chain every 300 ms (the sponsor's default) made each of a step's
    // waits last up to a block longer than it needed to.
    work: ["--steps", String(steps), "--poll-ms", "100"],
  }));
  child.onLine((line) => {
    const p = progressLine("sponsor", line, run.scenario());
    if (p !== null) run.say(p);
  });
  return child;
}

/** Runs the forged step: the first claim committed after the forging pipeline was put in place is the forged one. */
async function forgePhase(run: DevnetRun): Promise<void> {
  const s = run.scenario();
  const from = s.forge_from_height ?? 0;
  const { chain, signal } = run;
  const forged = async () =>
    (await chain.claims((await chain.status()).height)).find((c) => c.height >= from);
  let claim = await forged();
  if (!claim) {
    const child = await sponsor(run, run.net.forgeWorkersFile!, targetSteps(s, "forge"));
    while (!(claim = await forged())) {
      aborted(signal);
      await sleep(250, signal);
    }
    await run.sup.stop(child.name);
  }
  run.say(`${phaseLabel(s)} the forged claim ${claim.claim_id} is on the chain at height ${claim.height}`);
  await run.journal({ ...s, phase: "after", forge_claim: claim.claim_id });
}

/**
 * Waits until the forged claim is decided and fails the scenario, naming the reason, unless it was rejected:
 * a forgery the referee missed (its challenge window closed first on a loaded machine) would settle a model
 * whose forged component only the stopped forger holds, and the next step would fail obscurely.
 */
async function forgedClaimRefuted(run: DevnetRun, claimId: string): Promise<void> {
  for (;;) {
    aborted(run.signal);
    const c = await run.chain.get(`/claim?id=${claimId}`).catch(() => null);
    const state = isObject(c) && isObject(c.state) ? c.state : null;
    const status = state === null ? null : String(state.status);
    if (status === "rejected") return;
    if (status === "settled" || status === "expired") {
      throw new Error(
        `Cannot finish the devnet scenario: the forged claim ${claimId} was ${status}, not rejected (the referee did not challenge it within the challenge window; see ${run.sup.logs}/referee.log)`,
      );
    }
    await sleep(250, run.signal);
  }
}

/**
 * Waits until the forging provider's forged answer is refuted, and fails the scenario, naming the reason, if it
 * settled instead. Epoch 2 trains beside the paid answers, but only from here on: until then the referee's
 * check of the forged response (its first on the newly served model, which it loads first) must not compete
 * for the cores with the sponsor's and the workers' steps, or on a loaded machine it comes after the window
 * (19 s after the response at a load average of 17, when it ran beside a step). What is left beside the
 * training is the honest answers' windows, the forger's honest retry and their settlements.
 */
async function forgedAnswerRefuted(run: DevnetRun): Promise<void> {
  if (!(await hasInferenceHomes(run.layout))) return;
  for (;;) {
    aborted(run.signal);
    const row = (await loadInferenceJobs(run.layout.dir)).find((r) => r.provider === "provider-forger");
    const job = row === undefined
      ? null
      : await run.chain.get(`/inference?id=${row.job_id}`).catch(() => null);
    if (isObject(job) && isObject(job.state)) {
      const status = String(job.state.status);
      const responses = Array.isArray(job.claims) ? job.claims.length : 0;
      if (
        responses >= 2 || ["refuted", "reopened"].includes(status) || (status === "expired" && responses > 0)
      ) {
        return;
      }
      if (status === "settled") {
        throw new Error(
          `Cannot finish the devnet scenario: the forged answer of job ${
            row!.job_id
          } was settled, not refuted (the referee did not challenge it within the challenge window; see ${run.sup.logs}/referee.log)`,
        );
      }
    }
    await sleep(250, run.signal);
  }
}

/**
 * Fails the scenario, naming the reason, unless the forged score (the first score of the candidate's retention
 * windows 0-3, which the forger computes) was rejected: a forgery the referee missed would have moved the
 * gate's measurements, and the epoch's decision would not be the honest one.
 */
function forgedScoreRefuted(run: DevnetRun, evaluation: JsonObject): void {
  const scores = (evaluation.scores ?? []) as {
    side: string;
    role: string;
    offset: number;
    status: string;
  }[];
  const first = scores.find((x) => x.side === "candidate" && x.role === "retention" && x.offset === 0);
  if (first?.status === "rejected") return;
  throw new Error(
    `Cannot finish the devnet scenario: the forged score (candidate retention windows 0-3) was ${
      first?.status ?? "never submitted"
    }, not rejected (the referee did not challenge it within the challenge window; see ${run.sup.logs}/referee.log)`,
  );
}

/** The journaled step after the training phases of the current epoch. */
function trained(s: Scenario): Scenario {
  return { ...s, phase: "evaluate" };
}

/**
 * Runs epoch `epoch` of the journaled scenario from the phase it is in to its gate decision (the scenario
 * then stands at the phase after its evaluation): admit the cohort, train its schedule (the forged step in a
 * forging epoch 1), evaluate it (the forged score likewise). Safe to call again after a crash at any point.
 */
export async function runEpoch(run: DevnetRun, epoch: number): Promise<void> {
  const { chain, layout, net, signal } = run;
  if (run.scenario().epoch !== epoch) {
    throw new Error(`Cannot run epoch ${epoch}: the scenario is in epoch ${run.scenario().epoch}`);
  }
  for (;;) {
    aborted(signal);
    const s = run.scenario();
    if (s.epoch !== epoch || !["cohort", "honest", "forge", "after", "evaluate"].includes(s.phase)) return;
    if (s.phase === "cohort") {
      const previous = s.cohorts[epoch - 2] ?? null;
      const cohort = await admitCohort({
        sup: run.sup,
        layout,
        rpc: net.rpc,
        chain,
        say: run.say,
        signal,
        previous,
        label: phaseLabel(s),
      });
      const cohorts = cohort === null
        ? s.cohorts
        : [...s.cohorts.slice(0, epoch - 1), String(cohort.data_root)];
      const { before } = epochSplit(s);
      if (forgesNow(s) && before === 0) {
        await run.journal({
          ...s,
          cohorts,
          phase: "forge",
          forge_from_height: (await chain.status()).height,
        });
      } else await run.journal({ ...s, cohorts, phase: "honest" });
      continue;
    }
    if (s.phase === "honest" || s.phase === "after") {
      if (s.phase === "after" && s.forge_claim !== null) await forgedClaimRefuted(run, s.forge_claim);
      if (s.epoch === 2 && s.forge) await forgedAnswerRefuted(run);
      await untilExit(run, await sponsor(run, net.workersFile, targetSteps(s, s.phase)), "sponsor");
      if (s.phase === "honest" && forgesNow(s)) {
        await run.journal({ ...s, phase: "forge", forge_from_height: (await chain.status()).height });
      } else {
        await answersEnded(run);
        await run.journal(trained(s));
      }
      continue;
    }
    if (s.phase === "forge") {
      await forgePhase(run);
      continue;
    }
    // evaluate: epoch 1 of a forging scenario has the score forger in the evaluator's pool.
    const forging = forgesNow(s) && net.forgerUrl !== null;
    if (forging && run.forger !== "score") {
      await startForger(run.sup, layout, "score", Number(new URL(net.forgerUrl!).port));
      run.forger = "score";
    }
    const workersFile = forging ? net.evaluateWorkersFile : net.workersFile;
    // Resumed after the decision, the Evaluator is not run again: the next cohort may be active by now, and
    // it would wait for that one to be trained.
    const evaluate = async () =>
      (await decidedEvaluation(run, s)) ?? await runEvaluationPhase({
        sup: run.sup,
        layout,
        rpc: net.rpc,
        workersFile,
        say: run.say,
        signal,
        label: phaseLabel(s),
      });
    const [decided] = await Promise.all([
      evaluate(),
      s.epoch < s.epochs ? proposeDuringEvaluation(run, s) : null,
    ]);
    if (forging) forgedScoreRefuted(run, decided);
    await run.journal(afterEvaluation(s));
    return;
  }
}

/** This epoch's evaluation as the chain answers it once decided; null before. */
async function decidedEvaluation(run: DevnetRun, s: Scenario): Promise<JsonObject | null> {
  const cohort = s.cohorts[s.epoch - 1] ?? null;
  const facts = await run.chain.get("/evaluation") as { recent?: JsonObject[] } | null;
  return facts?.recent?.find((e) => e.cohort === cohort && e.status === "decided") ?? null;
}

/** Waits for the paid answers followed in the background (`inferencePhase`) to end; throws their failure. */
async function answersEnded(run: DevnetRun): Promise<void> {
  if (run.answers === null) return;
  await run.answers;
  run.answers = null;
}

/**
 * Proposes the next epoch's cohort during this epoch's evaluation, once the evaluation has reached its last
 * round (every group has at most its last score to settle) or was decided: the validators review and vote
 * while the last scores' windows run, and the cohort activates as soon as the evaluation is decided (a live
 * evaluation blocks activation, §6), so the next epoch's `cohort` phase finds it active. Not before the
 * evaluation is open: a cohort activated between the last settled step and the opening would leave this
 * one unevaluable. Not earlier in the evaluation: the proposal must not expire before the decision.
 */
async function proposeDuringEvaluation(run: DevnetRun, s: Scenario): Promise<void> {
  const cohort = s.cohorts[s.epoch - 1] ?? null;
  if (cohort === null) return;
  for (;;) {
    aborted(run.signal);
    const facts = await run.chain.get("/evaluation") as
      | {
        live: { cohort: string; groups: Record<string, { settled: number; total: number }> } | null;
        recent: { cohort: string }[];
      }
      | null;
    if (facts?.recent?.some((r) => r.cohort === cohort)) break;
    const live = facts?.live ?? null;
    // Four windows a score (PROTOCOL §7): at most one score left in every group.
    const groups = live !== null && live.cohort === cohort ? Object.values(live.groups) : [];
    if (groups.length > 0 && groups.every((g) => g.settled + 4 >= g.total)) break;
    await sleep(250, run.signal);
  }
  await proposeCohort({
    sup: run.sup,
    layout: run.layout,
    rpc: run.net.rpc,
    chain: run.chain,
    say: run.say,
    signal: run.signal,
    previous: cohort,
    label: phaseLabel(afterEvaluation({ ...s, phase: "inference" })),
  });
}

/**
 * The paid-inference phase between epoch 1 and the next: journals the next epoch at once and runs the answers
 * beside it (`paidAnswers`: the serving model given to the providers and the referee, the answers paid for,
 * their challenge windows and the forged answer's dispute). Inference jobs and training claims are separate
 * lifecycles on the chain, the client and the sponsor separate accounts, and a job keeps the model it was
 * asked of (§8), so epoch 2's cohort and training go on meanwhile; epoch 2 waits for the answers before its
 * evaluation (`answersEnded`), and a one-epoch scenario before it is done.
 */
async function inferencePhase(run: DevnetRun): Promise<void> {
  const next = afterEvaluation(run.scenario());
  run.answers = paidAnswers(run);
  if (next.phase === "done") await answersEnded(run);
  await run.journal(next);
}

/**
 * Gives the providers and the referee the serving model's objects (after a promotion only the workers hold
 * them), pays for the answers and follows them to their end (or, resumed, finds them paid: each question has
 * its fixed idempotency key, so nothing is paid twice). Awaited later: a failure is not left unhandled.
 */
function paidAnswers(run: DevnetRun): Promise<void> {
  const answers = (async () => {
    const { chain, layout, net } = run;
    if (!(await hasInferenceHomes(layout))) {
      run.say(
        "this devnet was built before paid inference: rebuild it with --reset to run the inference phase",
      );
      return;
    }
    const serving = (await chain.lifecycle()).serving_root!;
    const holders = [...layout.workers, layout.forger, layout.evaluator];
    for (const home of [layout.referee, layout.provider, layout.providerForger]) {
      await provideServingModel(new ChainClient(net.rpc), serving, home, holders);
    }
    await (await payAnswers(run.sup, layout, net.rpc, run.scenario().forge, run.say)).finished;
  })();
  answers.catch(() => {});
  return answers;
}

/** The steps every cohort of the devnet's genesis schedules (`params.steps_per_cohort`). */
export async function genesisCohortSteps(layout: DevnetLayout): Promise<number> {
  const g = parseJson(await Deno.readTextFile(layout.genesisPath)) as {
    params?: { steps_per_cohort?: number };
  };
  return g.params?.steps_per_cohort ?? 0;
}

/** Runs the scenario to its end (or resumes it) and returns the summary read from the chain. */
export async function runScenario(
  sup: Supervisor,
  layout: DevnetLayout,
  options: ScenarioOptions,
): Promise<{ summary: DevnetSummary; detail: SummaryDetail }> {
  const { say, signal } = options;
  const dir = layout.dir;
  const cohortSteps = await genesisCohortSteps(layout);
  if (!(await hasEvaluatorHome(layout)) || cohortSteps > 64 || cohortSteps < 1) {
    throw new Error(
      `Cannot run the devnet at ${dir}: it was built before whole epochs (no evaluator home or no per-cohort ` +
        `schedule); rebuild it with --reset`,
    );
  }
  let scenario = await loadScenario(dir);
  if (scenario === null) {
    if (options.steps !== cohortSteps) {
      say(
        `this devnet was built with ${cohortSteps} steps per cohort: training ${cohortSteps} (--reset to rebuild)`,
      );
    }
    scenario = newScenario({ epochs: options.epochs, steps: cohortSteps, forge: options.forge });
    await saveScenario(dir, scenario);
  } else if (
    scenario.steps !== options.steps || scenario.forge !== options.forge || scenario.epochs !== options.epochs
  ) {
    say(
      `resuming the scenario as first started: ${scenario.epochs} epochs of ${scenario.steps} steps${
        scenario.forge ? " and the forge" : ""
      }`,
    );
  }
  say(`${phaseLabel(scenario)} scenario phase ${scenario.phase}`);
  const engine = options.engine ?? "embedded";
  const mode = (s: Scenario): ForgerMode | null =>
    !forgesNow(s) ? null : ["evaluate"].includes(s.phase) ? "score" : "optimizer";
  const first = scenario;
  const forger = first.forge && first.epoch === 1 ? mode(first) ?? "score" : null;
  const net = await startNetwork(sup, layout, forger, say, engine);
  const chain = new ChainView(net.rpc);
  let current = scenario;
  const run: DevnetRun = {
    sup,
    layout,
    net,
    chain,
    say,
    signal,
    forger,
    answers: null,
    scenario: () => current,
    async journal(next) {
      await saveScenario(dir, next);
      current = next;
      say(`${phaseLabel(next)} scenario phase ${next.phase}`);
    },
  };
  net.referee.onLine((line) => {
    const p = progressLine("referee", line, current);
    if (p !== null) say(p);
  });
  if (current.epoch === 2 && ["cohort", "honest"].includes(current.phase)) {
    // Killed while epoch 2 trained beside the paid answers: follow them again (nothing is paid twice).
    run.answers = paidAnswers(run);
  }
  // The summary's block scan, done as the blocks come rather than all at the end.
  const scanning = new AbortController();
  const scanned = chain.followBlocks(scanning.signal);
  try {
    while (current.phase !== "done") {
      aborted(signal);
      if (current.phase === "inference") await inferencePhase(run);
      else await runEpoch(run, current.epoch);
    }
  } finally {
    scanning.abort();
    await scanned;
  }
  return await collectSummary(layout, net.urls, current, engine, chain);
}

/**
 * Builds the devnet if needed (its cohorts scheduling `steps` steps, its challenge window `challengeBlocks`
 * blocks) and opens it; a built devnet keeps the values it was built with.
 */
export async function prepareDevnet(
  dir: string,
  say: (line: string) => void,
  steps?: number,
  challengeBlocks?: number,
): Promise<DevnetLayout> {
  const layout = await ensureDevnet({
    dir,
    ...(steps === undefined ? {} : { stepsPerCohort: steps }),
    ...(challengeBlocks === undefined ? {} : { challengeBlocks }),
  }, say);
  say(`${layout.built ? "built" : "using"} the devnet at ${layout.dir} (genesis ${layout.genesisId})`);
  return layout;
}

/** The summary as one JSON line. */
export function summaryJson(s: DevnetSummary): string {
  return JSON.stringify(s);
}
