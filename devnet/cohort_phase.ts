/**
 * The devnet scenario's first phase: a cohort admitted by the validators before any training. The Curator
 * (its own process, `deno task curator`) collects every row of the devnet's pinned sources and proposes a
 * cohort; each validator reviews it with its own copy of the raw files (`--review-policy`) and votes; the
 * ledger activates it by stake. Everything here is read from the chain or delegated to the Curator's journal
 * (collect and propose are durable there), so running the phase again after a crash is safe: a collected
 * tranche is not collected again, a journaled proposal is not signed again, and an activated cohort ends the
 * phase at once. A proposal that expires unapproved is proposed again (the Curator's next attempt).
 *
 * @example
 * ```ts
 * import { admitCohort } from "./cohort_phase.ts";
 * // const cohort = await admitCohort({ sup, layout, rpc, say, signal });
 * ```
 */
import { isObject, type JsonObject } from "../core/canonical.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import type { ChainView } from "./chain_view.ts";
import { DEVNET_SOURCE_ROWS } from "../genesis/devnet/sources.ts";
import type { Supervisor } from "./supervisor.ts";

/** What the phase needs. */
export interface CohortPhase {
  readonly sup: Supervisor;
  readonly layout: DevnetLayout;
  readonly rpc: string;
  readonly chain: ChainView;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
  /** The previous epoch's cohort (null in the first epoch): only a newer active cohort ends the phase. */
  readonly previous?: string | null;
  /** The label of its progress lines (default `[cohort]`). */
  readonly label?: string;
}

/** The data part of `/lifecycle`. */
interface DataPart {
  data_root: string;
  proposal: string | null;
  cohort: { data_root: string; proposal: string; steps: number } | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function dataPart(chain: ChainView): Promise<DataPart | null> {
  const lc = await chain.get("/lifecycle") as { data?: DataPart | null } | null;
  return lc?.data ?? null;
}

/** Runs one `deno task curator` command to its end; its output lines (throws on a non-zero exit). */
async function curator(p: CohortPhase, command: string, args: readonly string[]): Promise<string[]> {
  const child = await p.sup.start({
    name: `curator-${command}`,
    task: "curator",
    listens: false,
    expectsExit: true,
    args: [
      command,
      "--home",
      p.layout.curator,
      "--rpc",
      p.rpc,
      "--sources",
      `${p.layout.curator}/sources/sources.json`,
      ...args,
    ],
  });
  const lines: string[] = [];
  child.onLine((l) => {
    lines.push(l);
    if (!l.startsWith("{")) p.say(`${p.label ?? "[cohort]"} curator ${command}: ${l}`);
  });
  const code = await Promise.race([
    child.exited,
    new Promise<number>((r) => p.signal.addEventListener("abort", () => r(-1), { once: true })),
  ]);
  if (p.signal.aborted) throw new Error("Cannot finish the cohort phase: interrupted");
  if (code !== 0) {
    throw new Error(
      `Cannot admit a cohort: curator ${command} exited with ${code}:\n${child.tail.slice(-10).join("\n")}`,
    );
  }
  return lines;
}

/** The first JSON record of a `curator propose --json` run that names its proposal, or null. */
function proposalRecord(lines: readonly string[]): JsonObject | null {
  for (const l of lines) {
    try {
      const v = JSON.parse(l);
      if (isObject(v) && typeof v.proposal === "string") return v;
    } catch { /* a progress line */ }
  }
  return null;
}

/** Runs `curator propose` and shows what it proposed. */
async function propose(p: CohortPhase): Promise<void> {
  const record = proposalRecord(await curator(p, "propose", ["--json"])) as
    | { proposal: string; status: string; documents: { retention: number; fresh: number; train: number } }
    | null;
  if (record) {
    p.say(
      `${
        p.label ?? "[cohort]"
      } proposed ${record.proposal} (${record.status}): ${record.documents.retention} ` +
        `retention, ${record.documents.fresh} fresh, ${record.documents.train} train documents`,
    );
  }
}

/**
 * Collects and proposes the next cohort without waiting for it to activate, unless one newer than `previous`
 * is already active or proposed (or the chain has no data lifecycle). The devnet calls it while the previous
 * cohort's evaluation runs (a trained cohort no longer blocks a proposal; a live evaluation blocks the
 * activation, §6), so the validators review and vote meanwhile and the cohort activates as the evaluation is
 * decided. Safe to call again after a crash (the Curator's collect and propose are durable).
 */
export async function proposeCohort(p: CohortPhase): Promise<void> {
  const data = await dataPart(p.chain);
  if (data === null || data.proposal !== null) return;
  if (data.cohort !== null && data.cohort.data_root !== (p.previous ?? null)) return;
  await curator(p, "collect", ["--rows", collectRows()]);
  if ((await dataPart(p.chain))!.proposal === null) await propose(p);
}

/** Rows a collect reads from each source: every row of the largest pinned source. */
function collectRows(): string {
  return String(Math.max(...Object.values(DEVNET_SOURCE_ROWS)));
}

/**
 * Admits a cohort unless one newer than `previous` is active (or the chain has no data lifecycle); returns the
 * active cohort's lifecycle view, or null without a data lifecycle. A later epoch's Curator collects again (a
 * source already read to its end adds nothing) and proposes from the documents no cohort has consumed; a
 * proposal already pending (`proposeCohort` made it) is only waited for.
 */
export async function admitCohort(p: CohortPhase): Promise<JsonObject | null> {
  let data = await dataPart(p.chain);
  if (data === null) {
    p.say(`${p.label ?? "[cohort]"} the chain has no data lifecycle: training on genesis batches`);
    return null;
  }
  const previous = p.previous ?? null;
  const admitted = (d: DataPart) => d.cohort !== null && d.cohort.data_root !== previous;
  if (admitted(data)) return data.cohort as unknown as JsonObject;
  if (data.proposal === null) await curator(p, "collect", ["--rows", collectRows()]);
  let votes = -1;
  for (;;) {
    if (p.signal.aborted) throw new Error("Cannot finish the cohort phase: interrupted");
    data = (await dataPart(p.chain))!;
    if (admitted(data)) {
      p.say(
        `${p.label ?? "[cohort]"} activated ${data.cohort!.data_root}: ${data.cohort!.steps} steps scheduled`,
      );
      return data.cohort as unknown as JsonObject;
    }
    if (data.proposal === null) {
      votes = -1;
      await propose(p);
      continue;
    }
    const proposal = await p.chain.get(`/data/proposal?id=${data.proposal}`) as
      | { state: { votes: [string, boolean][]; status: string } }
      | null;
    const n = proposal?.state.votes.filter(([, yes]) => yes).length ?? 0;
    if (n !== votes) {
      votes = n;
      p.say(
        `${
          p.label ?? "[cohort]"
        } proposal ${data.proposal}: ${n} of ${p.layout.validators.length} validators approved by review`,
      );
    }
    await sleep(250);
  }
}
