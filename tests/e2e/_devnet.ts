/**
 * Helpers for the devnet end-to-end tests: run `tasks/devnet.ts` as a real process (optionally SIGKILLed
 * when a progress line matches), parse its JSON summary, compute what an honest run must end with in-process
 * (the same kernels, batches and placement), and end any process a killed devnet left behind.
 */
import { devnetContents } from "../../genesis/devnet/contents.ts";
import { devnetCapacities } from "../../genesis/devnet/network.ts";
import { alive } from "../../genesis/devnet/supervisor.ts";
import type { DevnetSummary } from "../../genesis/devnet/summary.ts";
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
import { buildCohort } from "../../actors/curator/build.ts";
import { Corpus } from "../../actors/curator/corpus.ts";
import { screenTranche, usableRow } from "../../actors/curator/screen.ts";
import {
  DEVNET_CURATOR_WINDOWS,
  DEVNET_STEPS_PER_COHORT,
  devnetDataSection,
  devnetSourceFiles,
} from "../../genesis/devnet/sources.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

let scheduleCache: Batch[] | undefined;

/**
 * The batches the devnet's first cohort schedules, computed in-process from the pinned source files alone:
 * every row screened as the Curator screens it, the cohort built as the Curator builds it against the genesis
 * data root, and the schedule fixed as the ledger fixes it at activation (no previous cohort, so no replay).
 */
export async function devnetSchedule(): Promise<Batch[]> {
  if (scheduleCache) return scheduleCache;
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
    },
    codec,
    windows: DEVNET_CURATOR_WINDOWS,
    train: 128,
    messages: (d) => messages.get(d.object)!,
  });
  const train = built.document.documents.filter((d) => d.role === "train").flatMap((d) => d.batches);
  const byRoot = new Map(built.batches.map((b) => [id(b as unknown as JsonValue), b]));
  scheduleCache = cohortSchedule(built.root, train, null, DEVNET_STEPS_PER_COHORT).map((s) =>
    byRoot.get(s.batch)!
  );
  return scheduleCache;
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
 * Runs `deno run tasks/devnet.ts --json --dir DIR ...args` (or `deno task devnet` with `viaTask`); with
 * `killAt`, SIGKILLs the devnet process when a progress line matches it.
 */
export async function runDevnet(
  dir: string,
  args: readonly string[],
  options: { killAt?: RegExp; viaTask?: boolean; timeoutMs?: number } = {},
): Promise<DevnetRun> {
  const flags = ["--allow-read", "--allow-write", "--allow-env", "--allow-net=127.0.0.1", "--allow-run"];
  const cmd = options.viaTask
    ? ["task", "devnet", "--dir", dir, "--json", ...args]
    : ["run", ...flags, "tasks/devnet.ts", "--dir", dir, "--json", ...args];
  const child = new Deno.Command(Deno.execPath(), { args: cmd, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .spawn();
  const stderr: string[] = [];
  let killed = false;
  const timer = setTimeout(() => child.kill("SIGTERM"), options.timeoutMs ?? 280_000);
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

/** The losses of `steps` honest devnet steps and the learning root they end at, computed in-process. */
export function honestRun(steps: number, schedule: readonly Batch[]): { losses: number[]; root: string } {
  const contents = devnetContents();
  const partitions = place(PRESETS.devnet, devnetCapacities());
  let model: Model = initModel(PRESETS.devnet, 0);
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
  return { losses, root };
}
