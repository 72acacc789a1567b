/**
 * Helpers for the devnet end-to-end tests: run `tasks/devnet.ts` as a real process (optionally SIGKILLed
 * when a progress line matches), parse its JSON summary, compute what an honest run must end with in-process
 * (the same kernels, batches and placement), and end any process a killed devnet left behind.
 */
import { devnetContents } from "../../genesis/devnet/contents.ts";
import { devnetCapacities } from "../../devnet/network.ts";
import { alive } from "../../devnet/supervisor.ts";
import type { DevnetSummary } from "../../devnet/summary.ts";
import { fromHexFloat } from "../../core/hex_float.ts";
import { PRESETS } from "../../kernels/config.ts";
import { initModel, type Model } from "../../kernels/model.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { place } from "../../kernels/placement.ts";
import { trainStep } from "../../kernels/step.ts";
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import type { Batch } from "../../kernels/batch.ts";
import { NOTHING_CONSUMED } from "../../ledger/data/document.ts";
import { TextCodec } from "../../text/codec.ts";
import { JsonlRows } from "../../text/sources/jsonl.ts";
import { ParquetRows } from "../../text/sources/parquet.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import { cohortSchedule } from "../../workflows/cohort.ts";
import { documentLoss, FRESH_MARGIN, groupGate, microQ, RETENTION_MARGIN } from "../../workflows/gate.ts";
import { scoreRecord } from "../../kernels/score_record.ts";
import { buildCohort } from "../../actors/curator/build.ts";
import { Corpus } from "../../actors/curator/corpus.ts";
import { screenTranche, usableRow } from "../../actors/curator/screen.ts";
import {
  DEVNET_CURATOR_WINDOWS,
  DEVNET_EVALUATION_DOCUMENTS,
  DEVNET_STEPS_PER_COHORT,
  devnetDataSection,
  devnetSourceFiles,
} from "../../genesis/devnet/sources.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The devnet's first cohort built in-process: its scheduled batches and its evaluation windows by role. */
export interface DevnetCohort {
  readonly schedule: Batch[];
  /** Each evaluation role's windows in the order of the cohort's documents (one window a document). */
  readonly evaluation: { retention: Batch[]; fresh: Batch[] };
}

let cohortCache: DevnetCohort | undefined;

/**
 * The batches the devnet's first cohort schedules, computed in-process from the pinned source files alone:
 * every row screened as the Curator screens it, the cohort built as the Curator builds it against the genesis
 * data root, and the schedule fixed as the ledger fixes it at activation (no previous cohort, so no replay).
 */
export async function devnetSchedule(): Promise<Batch[]> {
  return (await devnetCohort()).schedule;
}

/** The devnet's first cohort (see `devnetSchedule`), with its evaluation windows. */
export async function devnetCohort(): Promise<DevnetCohort> {
  if (cohortCache) return cohortCache;
  const contents = devnetContents();
  const codec = TextCodec.fromParts(
    contents.codec.manifest as never,
    contents.codec.backend,
    contents.codec.root,
  );
  const files = devnetSourceFiles();
  const corpus = new Corpus();
  const messages = new Map<string, ChatMessage[]>();
  const usable = usableRow(codec, DEVNET_CURATOR_WINDOWS);
  for (const f of files) {
    const reader = f.spec.format === "jsonl"
      ? new JsonlRows(f.spec.name, f.bytes)
      : ParquetRows.open(f.spec.name, f.bytes);
    const rows = await reader.read(0, reader.count);
    const { tranche } = screenTranche({
      source: f.spec.name,
      start: 0,
      rows,
      corpus,
      consumed: new Set(),
      usable,
    });
    corpus.add(tranche);
    for (const d of tranche.kept) messages.set(d.object, rows[d.row]!);
  }
  const built = buildCohort({
    corpus,
    sources: files.map((f) => ({ spec: f.spec, file: f.file })),
    facts: {
      data_root: id(devnetDataSection(files)),
      tokenizer_root: codec.root,
      cursors: {},
      consumed: NOTHING_CONSUMED,
      evaluation_documents: DEVNET_EVALUATION_DOCUMENTS,
    },
    codec,
    windows: DEVNET_CURATOR_WINDOWS,
    train: 128,
    messages: (d) => messages.get(d.object)!,
  });
  const train = built.document.documents.filter((d) => d.role === "train").flatMap((d) => d.batches);
  const byRoot = new Map(built.batches.map((b) => [id(b as unknown as JsonValue), b]));
  const schedule = cohortSchedule(built.root, train, null, DEVNET_STEPS_PER_COHORT).map((s) =>
    byRoot.get(s.batch)!
  );
  const windows = (role: string) =>
    built.document.documents.filter((d) => d.role === role).flatMap((d) =>
      d.batches.map((b) => byRoot.get(b)!)
    );
  cohortCache = { schedule, evaluation: { retention: windows("retention"), fresh: windows("fresh") } };
  return cohortCache;
}

/** One gate group as the summary shows it. */
export interface ExpectedGate {
  S: string;
  Q: string;
  G: string;
  passed: boolean;
}

/**
 * The gate of the devnet's first evaluation computed in-process: every evaluation window scored under the
 * baseline and the candidate by the score record (4 windows a score, as the Evaluator scores them, on the
 * devnet's placement), one document per window, and the integer gate of PROTOCOL §7 per role.
 */
export async function expectedGate(
  baseline: Model,
  candidate: Model,
): Promise<{ retention: ExpectedGate; fresh: ExpectedGate; promoted: boolean }> {
  const { evaluation } = await devnetCohort();
  const partitions = place(PRESETS.devnet, devnetCapacities());
  const q = (model: Model, windows: readonly Batch[]) => {
    const out: bigint[] = [];
    for (let i = 0; i < windows.length; i += 4) {
      const p = scoreRecord(model, "0".repeat(64), windows.slice(i, i + 4), partitions);
      for (const [k, loss] of p.computed.losses.entries()) {
        out.push(microQ(documentLoss([{ loss, targets: p.computed.targets[k]! }])));
      }
    }
    return out;
  };
  const gate = (role: "retention" | "fresh", margin: bigint): ExpectedGate => {
    const g = groupGate(q(baseline, evaluation[role]), q(candidate, evaluation[role]), margin);
    return { S: g.S, Q: g.Q, G: g.G, passed: g.pass };
  };
  const retention = gate("retention", RETENTION_MARGIN);
  const fresh = gate("fresh", FRESH_MARGIN);
  return { retention, fresh, promoted: retention.passed && fresh.passed };
}

/** How a devnet run ended. */
export interface DevnetRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string[];
  readonly killed: boolean;
  readonly summary: DevnetSummary | null;
}

/**
 * The challenge window the tests build their devnets with: 80 blocks (20 s) instead of the default 48 (12 s),
 * since the suite runs them beside other tests on 2 cores and a referee must replay a forged claim in time
 * (under a load average of 40 one missed a 12 s window).
 */
export const TEST_CHALLENGE = ["--challenge-blocks", "80"] as const;

/** `deno run` arguments of a shortened devnet (1 epoch, 1 step, the tests' challenge window) in `dir`. */
export function shortDevnetArgs(dir: string, ...extra: string[]): string[] {
  return [
    "run",
    "--allow-all",
    "tasks/devnet.ts",
    "--dir",
    dir,
    "--epochs",
    "1",
    "--steps",
    "1",
    ...TEST_CHALLENGE,
    ...extra,
  ];
}

/**
 * Runs `deno run tasks/devnet.ts --json --dir DIR ...TEST_CHALLENGE ...args` (or `deno task devnet` with
 * `viaTask`); with `killAt`, SIGKILLs the devnet process when a progress line matches it.
 */
export async function runDevnet(
  dir: string,
  args: readonly string[],
  options: { killAt?: RegExp; viaTask?: boolean; timeoutMs?: number } = {},
): Promise<DevnetRun> {
  const flags = ["--allow-read", "--allow-write", "--allow-env", "--allow-net=127.0.0.1", "--allow-run"];
  const cmd = options.viaTask
    ? ["task", "devnet", "--dir", dir, "--json", ...TEST_CHALLENGE, ...args]
    : ["run", ...flags, "tasks/devnet.ts", "--dir", dir, "--json", ...TEST_CHALLENGE, ...args];
  const child = new Deno.Command(Deno.execPath(), { args: cmd, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .spawn();
  const stderr: string[] = [];
  let killed = false;
  const timer = setTimeout(() => child.kill("SIGTERM"), options.timeoutMs ?? 900_000);
  const out = new Response(child.stdout).text();
  let buf = "";
  for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      stderr.push(line);
      if (!killed && options.killAt?.test(line)) {
        killed = true;
        child.kill("SIGKILL");
      }
    }
  }
  const status = await child.status;
  clearTimeout(timer);
  const stdout = await out;
  const last = stdout.trim().split("\n").at(-1) ?? "";
  return {
    code: status.code,
    stdout,
    stderr,
    killed,
    summary: last.startsWith("{") ? JSON.parse(last) as DevnetSummary : null,
  };
}

function listed(dir: string): { pid: number }[] {
  try {
    return (JSON.parse(Deno.readTextFileSync(`${dir}/pids.json`)) as { children?: { pid: number }[] })
      .children ?? [];
  } catch {
    return [];
  }
}

/** SIGKILLs every child listed in `DIR/pids.json` that still runs (cleanup after a failed test). */
export async function killLeftovers(dir: string): Promise<number> {
  let n = 0;
  for (const c of listed(dir)) {
    if (!(await alive(c.pid, dir))) continue;
    try {
      Deno.kill(c.pid, "SIGKILL");
      n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

/** Live children of `dir`'s last supervisor, found with `ps` (0 when it cleaned up). */
export async function liveChildren(dir: string): Promise<number> {
  let n = 0;
  for (const c of listed(dir)) if (await alive(c.pid, dir)) n++;
  return n;
}

/** The losses of `steps` honest devnet steps and the learning root (and model) they end at, in-process. */
export function honestRun(
  steps: number,
  schedule: readonly Batch[],
): { losses: number[]; root: string; model: Model; genesis: Model } {
  const contents = devnetContents();
  const partitions = place(PRESETS.devnet, devnetCapacities());
  const genesis: Model = initModel(PRESETS.devnet, 0);
  let model = genesis;
  let manifest: Manifest = contents.model.manifest;
  let root = contents.model.root;
  const losses: number[] = [];
  for (let s = 0; s < steps; s++) {
    const out = trainStep({
      model,
      manifest,
      batch: schedule[s]!,
      partitions,
      learningRate: fromHexFloat(contents.learningRate),
      clip: fromHexFloat(contents.clip),
      step: s,
    });
    losses.push(out.loss);
    model = out.candidate;
    manifest = out.candidateManifest;
    root = out.candidateRoot;
  }
  return { losses, root, model, genesis };
}

/**
 * What two runs of the same devnet scenario must end with, whether or not one was interrupted: every epoch's
 * cohort (voted in by more than 2/3 of the power; its activation height and exact yes power are timing), each
 * claim's loss, outcome, reason and batch, the evaluation's decision
 * and gate groups, the learning and serving roots after it; every paid answer; everything rejected and why;
 * the atoms issued, conservation and agreement; and every named account's balance but the validators'. A
 * block's verifier reward goes to the validators whose votes its proposer had in time, and what a vote that
 * came late would have earned is burned: so the validators' balances and the atoms burned are compared as
 * one sum. Block heights, the app hash and ids that name heights or devnet keys (claims, evaluations, jobs)
 * are left out.
 */
export function finalState(s: DevnetSummary): JsonValue {
  const validators = s.balances.filter((b) => b.name.startsWith("validator-"));
  return {
    validators_agree: s.validators_agree,
    conserved: s.conserved,
    issued_atoms: s.issued_atoms,
    epochs: s.epochs.map((e) => ({
      epoch: e.epoch,
      // Activated in the block where the yes votes passed 2/3 of the power: whether the last validator's vote
      // was in by then is timing, so the yes power is compared as the supermajority it must be.
      cohort: {
        data_root: e.cohort.data_root,
        voted_in: e.cohort.yes_power * 3 > e.cohort.total_power * 2,
        total_power: e.cohort.total_power,
        replay_steps: e.cohort.replay_steps,
      },
      steps: e.steps.map((c) => ({ loss: c.loss, outcome: c.outcome, reason: c.reason, batch: c.batch })),
      evaluation: e.evaluation && { ...e.evaluation, evaluation_id: "" },
      learning_root_after: e.learning_root_after,
      serving_root_after: e.serving_root_after,
    })),
    inference: s.inference.map((a) => ({
      ...a,
      job_id: "",
      refuted: a.refuted.map((r) => r.reason),
    })),
    rejected: s.rejected.map((r) => ({ kind: r.kind, epoch: r.epoch, reason: r.reason })),
    balances: s.balances.filter((b) => !validators.includes(b)).map((b) => [b.name, b.balance]),
    validators_and_burned: validators.reduce((n, b) => n + b.balance, s.burned_atoms),
  };
}
