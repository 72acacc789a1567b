/**
 * What a dispute over a pending score claim needs (PROTOCOL §7.1): the windows it was assigned (read from the
 * ledger's own copy of the cohort's batches), the model of its side, the objects an availability challenge may
 * name (each partition's output), the objects a fraud challenge of a stage needs sealed (a partition's
 * components and input activation; the head's embedding, final norm and final hidden state — no transformer
 * block) and the referee's verdict on the sealed bytes alone (`kernels/score_referee.ts`).
 */
import type { JsonValue } from "../../core/canonical.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { Verdict } from "../../kernels/referee.ts";
import { replayScore, scoreNeeded } from "../../kernels/score_referee.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import { dataView } from "../data/store.ts";
import type { LedgerView } from "../state/accessors.ts";
import { sealedBytes } from "../training/dispute.ts";
import { type TrainingView, trainingView } from "../training/store.ts";
import { scoreParts } from "./check.ts";
import { type EvaluationRun, evaluationView, type ScoreEntry } from "./store.ts";

/** The windows `[offset, offset + n)` of `role` in `run`, as the cohort's batches. */
export function assignedWindows(
  view: LedgerView | TrainingView,
  run: EvaluationRun,
  role: "retention" | "fresh",
  offset: number,
  n: number,
): Batch[] {
  const d = dataView(view);
  return run.windows[role].slice(offset, offset + n).map((root) => {
    const b = d.batch(root);
    if (b === null) throw new Error(`Cannot find window batch ${root} of evaluation ${run.id}`);
    return b;
  });
}

/** Everything a score's dispute reads: its record parts, its windows and the manifest of its side's model. */
export function scoreContext(view: LedgerView | TrainingView, s: ScoreEntry) {
  const run = evaluationView(view).run(s.evaluation_id);
  if (run === null) throw new Error(`Cannot dispute score ${s.id}: evaluation ${s.evaluation_id} is gone`);
  const sc = s.state.scored;
  const parts = scoreParts(s.metadata, sc.record_root);
  const model = sc.side === "baseline" ? run.state.baseline : run.state.candidate;
  const manifest = trainingView(view as LedgerView).manifest(model) as Manifest & JsonValue | null;
  if (manifest === null) throw new Error(`Cannot dispute score ${s.id}: model ${model} is unknown`);
  const windows = assignedWindows(view, run, sc.role, sc.offset, sc.losses.length);
  return { ...parts, manifest: manifest as Manifest, windows };
}

/** The objects an availability challenge may name: each partition's output. */
export function scoreObjects(s: ScoreEntry): Set<string> {
  return new Set(scoreParts(s.metadata, s.state.scored.record_root).traces.map((t) => t.output));
}

/** The sorted objects a fraud challenge of `stage` needs sealed. */
export function scoreFraudNeeded(view: LedgerView | TrainingView, s: ScoreEntry, stage: number): string[] {
  const c = scoreContext(view, s);
  return scoreNeeded(c.manifest, c.traces, c.head, stage);
}

/** Runs the referee over the live fraud challenge `c`, reading only the objects it has sealed. */
export function scoreVerdict(t: TrainingView, s: ScoreEntry, c: Challenge): Verdict {
  const ctx = scoreContext(t, s);
  const fetch = (root: string) => c.sealed.includes(root) ? sealedBytes(t, root) : undefined;
  return replayScore({ ...ctx, stage: c.stage, fetch });
}
