/**
 * The SmolLM2 devnet scenario (`deno task devnet --model smollm2`): four validators (a proposer and three
 * replicas, each reviewing data proposals by its operator's policy), workers 0-2 holding the 30-block model at
 * 48M parameters each, worker-3 for the blocks a growth adds, a forging worker (`--forge optimizer`), the
 * referee, and the sponsor, the Curator and the Evaluator started phase by phase:
 *
 * 1. `admit`: the Curator collects the pinned sources (cut by the SmolLM2 codec, only rows of at least 10
 *    response targets: `SMOLLM2_CURATOR_MIN_TARGETS`) and proposes a cohort, which
 *    the validators review and vote in (the small devnet's `cohort_phase.ts`); it schedules one step;
 * 2. `honest`: one full-model step on the cohort's scheduled window, paid when its challenge window passes;
 * 3. `readmit`: a second cohort, voted in the same way (growth is allowed only before a cohort's first step);
 * 4. `forge`: one step whose last stage (12 blocks) is computed by the forger; the referee replays it, files a
 *    fraud challenge, uploads and seals the stage's real inputs in 1 MiB chunks and resolves, and the chain
 *    rejects the claim (`optimizer update`) with the slash;
 * 5. `grow`: the sponsor grows the model by four identity blocks (`deno task sponsor --grow 4`); the referee
 *    checks the growth from the parent's last block alone; nothing is minted;
 * 6. `grown`: one paid step on the grown model (the second cohort's step), now on four workers;
 * 7. `answer`: the final model's components are gathered into `objects/` and `deno task generate` answers
 *    "What is the capital of France?" greedily;
 * 8. `evaluate`: the Evaluator scores the second cohort's candidate (the grown, trained model) against the
 *    serving root (the genesis SmolLM2) on the cohort's 8 retention and 8 fresh documents and the ledger's gate
 *    decides (`evaluation_phase.ts`); the referee checks every score; both groups pass and the gate promotes the
 *    candidate (PROTOCOL §15.1); the Evaluator's workers get the candidate's components they lack over HTTP
 *    (a worker admits one maximal object in flight);
 * 9. `paid`: a client buys the same question's answer through paid inference from a Provider serving the
 *    chain's serving model — the promoted model — paid per token and settled after the referee checked the
 *    response (`smollm2_paid.ts`).
 *
 * Each phase change is journaled (`smollm2_journal.ts`) before it is acted on and the rest is read from the
 * chain, so a run killed at any moment resumes. Every 2 s the peak RSS of every process is sampled.
 */
import { canonicalBytes, isObject, type JsonObject, type JsonValue, parseJson } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { readWorkersFile, WorkerClient } from "../actors/common/worker_client.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import { ChainView } from "./chain_view.ts";
import type { Child, Supervisor } from "./supervisor.ts";
import { sponsorSpec } from "./sponsor_spec.ts";
import { SMOLLM2_CAPACITY, SMOLLM2_GROWTH_BLOCKS } from "../genesis/devnet/smollm2_contents.ts";
import {
  loadSmollm2Scenario,
  newSmollm2Scenario,
  peakRss,
  saveSmollm2Scenario,
  type Smollm2Phase,
  type Smollm2Scenario,
} from "./smollm2_journal.ts";
import { collectSmollm2Report, type Smollm2Report } from "./smollm2_report.ts";
import { buySmollm2Answer } from "./smollm2_paid.ts";
import { admitCohort } from "./cohort_phase.ts";
import { runEvaluationPhase } from "./evaluation_phase.ts";

/** The question the final model answers. */
export const SMOLLM2_PROMPT = "What is the capital of France?";

/** How long a SmolLM2 devnet worker waits for a request body to arrive whole. */
export const SMOLLM2_WORKER_BODY_TIMEOUT_MS = 60_000;

/** How to run the scenario. */
export interface Smollm2Options {
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

function aborted(signal: AbortSignal): void {
  if (!signal.aborted) return;
  const why = signal.reason instanceof Error ? signal.reason.message : "interrupted";
  throw new Error(`Cannot finish the SmolLM2 scenario: ${why}`);
}

async function writeWorkers(path: string, homes: readonly string[], urls: readonly string[]): Promise<void> {
  const entries = homes.map((h, i) => ({
    url: urls[i]!,
    token_file: `${h}/token`,
    capacity: SMOLLM2_CAPACITY,
  }));
  await Deno.writeTextFile(path, JSON.stringify(entries, null, 2) + "\n");
}

/** The running network: validator URLs (proposer first) and the workers files of this run. */
interface Smollm2Network {
  readonly urls: string[];
  readonly referee: Child;
  readonly workersFile: string;
  readonly forgeWorkersFile: string;
}

/** A validator's review policy flag, when its home has one (a devnet built with the data lifecycle). */
async function reviewArgs(home: string): Promise<string[]> {
  const policy = `${home}/review-policy.json`;
  return await Deno.stat(policy).then(() => ["--review-policy", policy], () => []);
}

async function startSmollm2Network(
  sup: Supervisor,
  layout: DevnetLayout,
  say: (line: string) => void,
): Promise<Smollm2Network> {
  const v0 = await sup.start({
    name: "validator-0",
    task: "validator",
    args: [
      "--home",
      layout.validators[0]!,
      "--genesis",
      layout.genesisPath,
      ...(await reviewArgs(layout.validators[0]!)),
    ],
  });
  const urls = [v0.url!];
  for (let i = 1; i < layout.validators.length; i++) {
    const home = layout.validators[i]!;
    const v = await sup.start({
      name: `validator-${i}`,
      task: "validator",
      args: [
        "--home",
        home,
        "--genesis",
        layout.genesisPath,
        "--follow",
        v0.url!,
        ...(await reviewArgs(home)),
      ],
    });
    urls.push(v.url!);
  }
  say(`validators ${urls.join(" ")}`);
  const workerUrls: string[] = [];
  // A worker receives whole SmolLM2 components (the embedding is 113 MB) while it computes a stage on a loaded
  // machine: 60 s for a body instead of the default 10 s (still a deadline; ≥ 4 MB/s for a maximal object).
  const bodyTimeout = ["--body-timeout-ms", String(SMOLLM2_WORKER_BODY_TIMEOUT_MS)];
  for (const [i, home] of layout.workers.entries()) {
    workerUrls.push(
      (await sup.start({ name: `worker-${i}`, task: "worker", args: ["--home", home, ...bodyTimeout] })).url!,
    );
  }
  const forger = await sup.start({
    name: "forger",
    task: "worker",
    args: ["--home", layout.forger, "--forge", "optimizer"],
  });
  const dir = layout.dir;
  const w = layout.workers;
  await writeWorkers(`${dir}/workers.json`, w, workerUrls);
  // The forger computes stage 2 (the last of three); worker-2 stays listed so its components can be copied.
  await writeWorkers(`${dir}/workers-forge.json`, [w[0]!, w[1]!, layout.forger, w[2]!, w[3]!], [
    workerUrls[0]!,
    workerUrls[1]!,
    forger.url!,
    workerUrls[2]!,
    workerUrls[3]!,
  ]);
  await writeWorkers(`${dir}/referee-workers.json`, [...w, layout.forger], [...workerUrls, forger.url!]);
  say(`workers ${workerUrls.join(" ")}, forger ${forger.url}`);
  const referee = await sup.start({
    name: "referee",
    task: "referee",
    listens: false,
    args: ["--home", layout.referee, "--rpc", urls[0]!, "--workers", `${dir}/referee-workers.json`, "--json"],
  });
  return { urls, referee, workersFile: `${dir}/workers.json`, forgeWorkersFile: `${dir}/workers-forge.json` };
}

/** A progress line for a sponsor or referee JSON line; null for lines not worth showing. */
function progressLine(role: string, line: string, phase: Smollm2Phase): string | null {
  let e: JsonObject;
  try {
    const v = parseJson(line);
    if (!isObject(v)) return null;
    e = v;
  } catch {
    return line.startsWith("error") ? `${role}: ${line}` : null;
  }
  if (role === "sponsor" && (e.event === "step" || e.event === "grow" || e.event === "grown")) {
    const what = e.event === "step"
      ? `step ${Number(e.step) + 1} ${e.phase}`
      : `${e.event} ${e.phase ?? e.status}`;
    return `[${phase}] ${what}${e.height !== undefined ? ` height=${e.height}` : ""}`;
  }
  if (
    role === "referee" && typeof e.event === "string" && !["status", "account", "publish"].includes(e.event)
  ) {
    if (e.event === "progress" && Number(e.bytes_done) % (16 * 1024 * 1024) >= 1024 * 1024) return null;
    const stage = e.stage === null || e.stage === undefined ? "" : ` stage ${e.stage}`;
    return `[${phase}] referee ${e.event} ${String(e.claim_id).slice(0, 12)}${stage}: ${e.detail}`;
  }
  return null;
}

/**
 * Times the referee's lines (wall clock of this process): each stage's verdict from the moment it saw the
 * claim (fetching and replaying). Written into the journal object `current()` returns.
 */
function timeReferee(current: () => Smollm2Scenario): (line: string) => void {
  const seen = new Map<string, number>();
  return (line) => {
    let e: JsonObject;
    try {
      const v = parseJson(line);
      if (!isObject(v)) return;
      e = v;
    } catch {
      return;
    }
    const now = performance.now(), claim = String(e.claim_id), s = current();
    if (e.event === "claim") seen.set(claim, now);
    if (e.event === "verdict" && seen.has(claim) && typeof e.stage === "number") {
      const stages = [...(s.replay_ms[claim] ?? [])];
      stages[e.stage] = Math.round(now - seen.get(claim)!);
      s.replay_ms = { ...s.replay_ms, [claim]: stages };
    }
  };
}

/** Runs the scenario to its end (or resumes it) and returns the report read from the chain and the journal. */
export async function runSmollm2Scenario(
  sup: Supervisor,
  layout: DevnetLayout,
  options: Smollm2Options,
): Promise<Smollm2Report> {
  const { say, signal } = options;
  const dir = layout.dir;
  let s = (await loadSmollm2Scenario(dir)) ?? newSmollm2Scenario();
  await saveSmollm2Scenario(dir, s);
  say(`scenario phase ${s.phase}`);
  const net = await startSmollm2Network(sup, layout, say);
  const rpc = net.urls[0]!;
  const chain = new ChainView(rpc);
  const watch = (role: string) => (line: string) => {
    const p = progressLine(role, line, s.phase);
    if (p !== null) say(p);
  };
  net.referee.onLine(watch("referee"));
  net.referee.onLine(timeReferee(() => s));
  // The referee's pass loop does one thing at a time (a dispute's uploads take minutes): before the sponsor
  // makes a claim or a growth, the referee has scanned every block so far, so it sees the claim in its window.
  let referee = { scanned: -1, behind_stages: 1 };
  net.referee.onLine((line) => {
    try {
      const v = parseJson(line);
      if (isObject(v) && v.event === "status") {
        referee = { scanned: Number(v.scanned), behind_stages: Number(v.behind_stages) };
      }
    } catch { /* not JSON */ }
  });
  const refereeCaughtUp = async () => {
    const h = (await chain.status()).height;
    if (referee.scanned >= h && referee.behind_stages === 0) return;
    say(`[${s.phase}] waiting for the referee to scan up to height ${h} (it is at ${referee.scanned})`);
    while (!(referee.scanned >= h && referee.behind_stages === 0)) {
      aborted(signal);
      await sleep(1_000, signal);
    }
  };

  // Peak RSS: VmHWM only grows, so sampling it every 2 s misses at most the last 2 s of a process.
  const sampling = (async () => {
    while (!signal.aborted && s.phase !== "done") {
      const pids = JSON.parse(await Deno.readTextFile(`${dir}/pids.json`).catch(() => "{}")) as {
        children?: { name: string; pid: number }[];
      };
      for (const c of pids.children ?? []) {
        const rss = await peakRss(c.pid);
        if (rss !== null && rss > (s.peak_rss[c.name] ?? 0)) s.peak_rss[c.name] = rss;
      }
      await sleep(2_000, signal);
    }
  })();

  let phaseStart = performance.now();
  const next = async (phase: Smollm2Phase, changes: Partial<Smollm2Scenario> = {}) => {
    s = {
      ...s,
      ...changes,
      phase,
      phase_ms: { ...s.phase_ms, [s.phase]: Math.round(performance.now() - phaseStart) },
    };
    await saveSmollm2Scenario(dir, s);
    phaseStart = performance.now();
    say(`scenario phase ${phase}`);
  };
  const sponsor = async (workersFile: string, args: string[]): Promise<Child> => {
    const child = await sup.start(
      sponsorSpec({ home: layout.sponsor, rpc, workers: workersFile, budget: 8, work: args }),
    );
    child.onLine(watch("sponsor"));
    return child;
  };
  /** Runs the sponsor to its exit; its last JSON line and the open→claim time of the step it drove. */
  const untilExit = async (child: Child): Promise<{ last: JsonObject | null; stepMs: number | null }> => {
    let open = 0, claimed = 0, last: JsonObject | null = null;
    child.onLine((line) => {
      try {
        const v = parseJson(line);
        if (!isObject(v)) return;
        last = v;
        if (v.event === "step" && v.phase === "open") open = performance.now();
        if (v.event === "step" && v.phase === "claim" && open > 0) claimed = performance.now();
      } catch { /* not JSON */ }
    });
    const code = await Promise.race([
      child.exited,
      new Promise<number>((r) => signal.addEventListener("abort", () => r(-1))),
    ]);
    aborted(signal);
    if (code !== 0) {
      throw new Error(
        `Cannot finish the SmolLM2 scenario: the sponsor exited with ${code}:\n${
          child.tail.slice(-15).join("\n")
        }`,
      );
    }
    return { last, stepMs: claimed > 0 ? Math.round(claimed - open) : null };
  };
  const decided = async (claimId: string): Promise<JsonObject> => {
    for (;;) {
      aborted(signal);
      const c = await chain.get(`/claim?id=${claimId}`).catch(() => null);
      const state = isObject(c) && isObject(c.state) ? c.state : null;
      if (state && ["settled", "rejected", "expired"].includes(String(state.status))) return state;
      await sleep(500, signal);
    }
  };

  try {
    while (s.phase !== "done") {
      aborted(signal);
      if (!["admit", "readmit", "answer"].includes(s.phase)) await refereeCaughtUp();
      if (s.phase === "admit" || s.phase === "readmit") {
        const cohort = await admitCohort({
          sup,
          layout,
          rpc,
          chain,
          say,
          signal,
          previous: s.phase === "readmit" ? s.cohorts[0] ?? null : null,
          label: `[${s.phase}]`,
        });
        if (cohort === null) {
          throw new Error(
            `Cannot run the SmolLM2 scenario at ${dir}: it was built before cohorts (no data lifecycle); rebuild it with --reset`,
          );
        }
        const cohorts = [...s.cohorts.slice(0, s.phase === "admit" ? 0 : 1), String(cohort.data_root)];
        if (s.phase === "admit") await next("honest", { cohorts });
        else await next("forge", { cohorts, forge_from_height: (await chain.status()).height });
      } else if (s.phase === "honest" || s.phase === "grown") {
        const r = await untilExit(
          await sponsor(net.workersFile, ["--steps", s.phase === "honest" ? "1" : "2"]),
        );
        const step_ms = r.stepMs === null ? s.step_ms : { ...s.step_ms, [s.phase]: r.stepMs };
        if (s.phase === "honest") await next("readmit", { step_ms });
        else await next("answer", { step_ms });
      } else if (s.phase === "forge") {
        const from = s.forge_from_height ?? 0;
        const forged = async () =>
          (await chain.claims((await chain.status()).height)).find((c) => c.height >= from);
        let claim = s.forge_claim === null ? await forged() : { claim_id: s.forge_claim };
        if (!claim) {
          const child = await sponsor(net.forgeWorkersFile, ["--steps", "2"]);
          while (!(claim = await forged())) {
            aborted(signal);
            await sleep(500, signal);
          }
          await sup.stop(child.name);
          await saveSmollm2Scenario(dir, s = { ...s, forge_claim: claim.claim_id });
        }
        say(`[forge] the forged claim ${claim.claim_id} is on the chain; waiting for the dispute`);
        const state = await decided(claim.claim_id);
        say(`[forge] the forged claim is ${state.status}${state.reason ? `: ${state.reason}` : ""}`);
        if (state.status !== "rejected") {
          throw new Error(
            `Cannot finish the SmolLM2 scenario: the forged claim ${claim.claim_id} was ${state.status}, not refuted (the referee did not reach its stage within the challenge window; see ${sup.logs}/referee.log)`,
          );
        }
        await next("grow", { forge_claim: claim.claim_id });
      } else if (s.phase === "grow") {
        const r = await untilExit(await sponsor(net.workersFile, ["--grow", String(SMOLLM2_GROWTH_BLOCKS)]));
        // Both manifests into objects/, so the growth can be checked offline (the grown logits are the parent's).
        const g = r.last as { parent?: string; model_root?: string } | null;
        const client = new ChainClient(rpc), store = new ObjectStore(layout.objects);
        for (const root of [g?.parent, g?.model_root]) {
          if (typeof root === "string") {
            await store.put(canonicalBytes((await client.manifest(root)) as never));
          }
        }
        await next("grown", { growth: r.last });
      } else if (s.phase === "answer") {
        await next("evaluate", { answer: await answer(sup, layout, rpc, net.workersFile, say, signal) });
      } else if (s.phase === "evaluate") {
        const decided = await runEvaluationPhase({
          sup,
          layout,
          rpc,
          workersFile: net.workersFile,
          say,
          signal,
        });
        await next("paid", { evaluation: String(decided.evaluation_id) });
      } else if (s.phase === "paid") {
        await next("done", { paid_model: await buySmollm2Answer(sup, layout, rpc, say, signal) });
      }
    }
    // Two more blocks so the verifier reward of the last settlement is paid.
    const h = (await chain.status()).height;
    while ((await chain.status()).height < h + 2) await sleep(200, signal);
    await sampling;
    await saveSmollm2Scenario(dir, s);
    // Replicas re-apply every block (a loaded machine leaves them minutes behind): compare app hashes at a
    // height every validator has committed.
    const head = (await chain.status()).height;
    for (const url of net.urls.slice(1)) {
      const v = new ChainView(url);
      while ((await v.status()).height < head) {
        aborted(signal);
        await sleep(1_000, signal);
      }
    }
    return await collectSmollm2Report(layout, net.urls, s);
  } finally {
    if (s.phase !== "done") await saveSmollm2Scenario(dir, s).catch(() => {});
  }
}

/**
 * Gathers the learning model's components from the workers into the devnet's `objects/` (each fetched once
 * and checked against its root) and asks `deno task generate` for the greedy answer to `SMOLLM2_PROMPT`.
 */
async function answer(
  sup: Supervisor,
  layout: DevnetLayout,
  rpc: string,
  workersFile: string,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<{ prompt: string; text: string; model_root: string }> {
  const chain = new ChainClient(rpc);
  const root = (await chain.lifecycle()).learning_root!;
  const manifest = await chain.manifest(root);
  const store = new ObjectStore(layout.objects);
  await store.put(canonicalBytes(manifest as unknown as JsonValue));
  const workers = (await readWorkersFile(workersFile)).map((e) => new WorkerClient(e.url, e.token));
  for (const [name, r] of Object.entries(manifest.components)) {
    if (await store.has(r)) continue;
    let got = false;
    for (const w of workers) {
      if (!(await w.hasObject(r).catch(() => false))) continue;
      await store.putExpected(r, await w.getObject(r));
      got = true;
      break;
    }
    if (!got) throw new Error(`Cannot answer with the final model: no worker holds ${name} (${r})`);
  }
  say(`[answer] asking the final model ${root.slice(0, 12)}: ${SMOLLM2_PROMPT}`);
  const child = await sup.start({
    name: "generate",
    task: "generate",
    listens: false,
    expectsExit: true,
    args: ["--model", root, "--objects", layout.objects, "--prompt", SMOLLM2_PROMPT, "--max-tokens", "24"],
  });
  const code = await Promise.race([
    child.exited,
    new Promise<number>((r) => signal.addEventListener("abort", () => r(-1))),
  ]);
  aborted(signal);
  // The answer is what generate printed on stdout: every line but its progress lines on stderr.
  const progress = /\r|^(loading model|loaded model|prepared the int8|\d+ tokens in )/;
  const out = child.tail.filter((l) => !progress.test(l));
  if (code !== 0) {
    throw new Error(
      `Cannot answer with the final model: generate exited with ${code}:\n${out.slice(-10).join("\n")}`,
    );
  }
  const text = out.join("\n").trim();
  say(`[answer] ${text}`);
  return { prompt: SMOLLM2_PROMPT, text, model_root: root };
}
