/**
 * The SmolLM2 devnet's cohorts worked out in-process, exactly as its network makes them: the Curator collects
 * every row of the pinned sources (`genesis/devnet/sources.ts`, in the sources file's order, one tranche a
 * source, screened by `actors/curator/screen.ts` with its `min_targets` rule) and builds each cohort at the chain's cursors and consumed
 * sets (`actors/curator/build.ts`, 128 train documents at most), and activation fixes the schedule
 * (`cohortSchedule`, one step a cohort). So the gate check can train on the very windows the network's steps
 * train on and score the very documents its evaluation scores, before a network runs.
 *
 * @example
 * ```ts
 * import { planSmollm2Cohorts } from "./smollm2_cohort_plan.ts";
 * // const [first, second] = planSmollm2Cohorts(codec, windows, 2);
 * // first.schedule[0]; // the batch of the honest step; second.fresh: the evaluated fresh documents' windows
 * ```
 */
import { id } from "../core/digest.ts";
import type { Batch } from "../kernels/batch.ts";
import type { ConsumedIndex } from "../ledger/data/document.ts";
import type { TextCodec } from "../text/codec.ts";
import type { ChatMessage } from "../text/template_render.ts";
import type { WindowOptions } from "../text/windows.ts";
import { buildCohort } from "../actors/curator/build.ts";
import { Corpus } from "../actors/curator/corpus.ts";
import { screenTranche, usableRow } from "../actors/curator/screen.ts";
import { cohortSchedule } from "../workflows/cohort.ts";
import { DEVNET_SOURCE_ROWS, devnetDataSection, devnetSourceFiles } from "../genesis/devnet/sources.ts";
import { DEVNET_TOKENIZER_ROWS } from "../genesis/devnet/codec.ts";
import { devnetRows, GENERATOR_VERSION } from "../genesis/devnet/generator.ts";
import { rowDocument } from "../text/sources/document.ts";

/** One planned cohort: its data root, the scheduled steps' batches and its evaluation documents' windows. */
export interface PlannedCohort {
  readonly root: string;
  readonly schedule: Batch[];
  readonly retention: Batch[][];
  readonly fresh: Batch[][];
}

/** The generator rows each devnet source holds (`devnetSourceFiles`), by source name. */
function sourceRows(): Map<string, ChatMessage[][]> {
  const r = DEVNET_SOURCE_ROWS;
  return new Map([
    [
      "devnet-chat",
      devnetRows({ generator: GENERATOR_VERSION, seed: "devnet-0" }, DEVNET_TOKENIZER_ROWS, r.train),
    ],
    [
      "devnet-retention",
      devnetRows({ generator: GENERATOR_VERSION, seed: "devnet-retention" }, 0, r.retention),
    ],
    ["devnet-fresh", devnetRows({ generator: GENERATOR_VERSION, seed: "devnet-fresh" }, 0, r.fresh)],
  ]);
}

/**
 * The first `count` cohorts, each with `steps` scheduled steps and `evaluation` retention and fresh documents
 * (the genesis `data.evaluation_documents`), cut into `windows` with `codec` by a Curator whose screening rule
 * is `minTargets` (sources file `min_targets`).
 */
export function planSmollm2Cohorts(
  codec: TextCodec,
  windows: WindowOptions,
  count: number,
  steps = 1,
  evaluation = 8,
  minTargets = 0,
): PlannedCohort[] {
  const files = devnetSourceFiles();
  const section = { ...devnetDataSection(files), evaluation_documents: evaluation };
  const rows = sourceRows();
  const corpus = new Corpus();
  const usable = usableRow(codec, windows, minTargets);
  const messages = new Map<string, ChatMessage[]>();
  for (const f of files) {
    const all = rows.get(f.spec.name)!;
    const { tranche } = screenTranche({
      source: f.spec.name,
      start: 0,
      rows: all,
      corpus,
      consumed: new Set(),
      usable,
    });
    corpus.add(tranche);
    for (const m of all) messages.set(rowDocument(m).object, m);
  }
  const consumed = { documents: new Set<string>(), positions: new Set<string>(), batches: new Set<string>() };
  const index: ConsumedIndex = {
    document: (d) => consumed.documents.has(d),
    position: (s, r) => consumed.positions.has(`${s}/${r}`),
    batch: (b) => consumed.batches.has(b),
  };
  let dataRoot = id(section);
  const cursors: Record<string, number> = Object.fromEntries(files.map((f) => [f.spec.name, 0]));
  let pool: string[] | null = null;
  const out: PlannedCohort[] = [];
  for (let c = 0; c < count; c++) {
    const built = buildCohort({
      corpus,
      sources: files.map((f) => ({ spec: f.spec, file: f.file })),
      facts: {
        data_root: dataRoot,
        tokenizer_root: codec.root,
        cursors: { ...cursors },
        consumed: index,
        evaluation_documents: evaluation,
      },
      codec,
      windows,
      train: 128,
      messages: (d) => messages.get(d.object)!,
    });
    const byRoot = new Map(built.batches.map((b) => [id(b as never), b] as const));
    const docs = built.document.documents;
    const windowsOf = (role: string) =>
      docs.filter((d) => d.role === role).map((d) => d.batches.map((r) => byRoot.get(r)!));
    const train = docs.filter((d) => d.role === "train").flatMap((d) => d.batches);
    const schedule = cohortSchedule(built.root, train, pool, steps).map((s) => byRoot.get(s.batch)!);
    out.push({ root: built.root, schedule, retention: windowsOf("retention"), fresh: windowsOf("fresh") });
    for (const d of docs) {
      consumed.documents.add(d.id);
      consumed.positions.add(`${d.source}/${d.row}`);
      d.batches.forEach((b) => consumed.batches.add(b));
    }
    for (const w of built.document.windows) cursors[w.source] = w.end;
    dataRoot = built.root;
    pool = train;
  }
  return out;
}
