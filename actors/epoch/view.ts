/**
 * Where a controller's epochs stand, derived from its journals alone (read-only; nothing here needs the
 * chain): `status` is the latest epoch — its phase (the epoch machine's state), cohort, step i/n, the
 * evaluation's scores per group (from the Evaluator's journal: scores the chain committed) and the decision;
 * `history` is every finished epoch with its cohort, steps, losses, decision and cost, plus the day's charges.
 *
 * @example
 * ```ts
 * import { epochHistory, epochStatus } from "./view.ts";
 * import { Journal } from "../runtime/journal.ts";
 * const journal = Journal.open("/tmp/epoch/journal.sqlite", { readOnly: true });
 * epochStatus(journal, null);
 * epochHistory(journal);
 * ```
 */
import { decodeCanonical, type JsonObject, parseJson } from "../../core/canonical.ts";
import { EventLog } from "../runtime/event_log.ts";
import type { Journal } from "../runtime/journal.ts";
import type { EpochState } from "../../workflows/epoch.ts";
import type { EpochInput, EpochReport } from "./controller.ts";
import { type Charge, charges } from "./daily_budget.ts";
import { GROUPS, type StepAttempt } from "./roles.ts";

/** The latest epoch, as `deno task epoch status` shows it. */
export interface EpochStatus extends JsonObject {
  epoch: number | null;
  /** `collecting`, `proposing`, `training`, `evaluating`, `decided`, or `failed` (the operation refused). */
  phase: string | null;
  running: boolean;
  cohort: string | null;
  proposal: string | null;
  step: { settled: number; steps: number } | null;
  losses: string[];
  evaluation: { evaluation_id: string; groups: Record<string, number> } | null;
  decision: { outcome: string; reason: string } | null;
  charges: Charge[];
}

/** One finished epoch, as `deno task epoch history` shows it. */
export interface EpochHistoryRow extends JsonObject {
  epoch: number;
  outcome: string;
  reason: string;
  cohort: string | null;
  steps: number;
  attempts: number;
  losses: string[];
  decision: string | null;
  cost: number | null;
  charged_atoms: number | null;
}

type Result = { ok: boolean; value?: EpochReport; code?: string; message?: string };

function epochOps(journal: Journal) {
  return journal.operations().filter((op) => op.handler === "epoch" && op.input !== null);
}

/** The latest epoch's status; `evaluatorJournal` (the Evaluator's, when it exists) adds its scores. */
export function epochStatus(journal: Journal, evaluatorJournal: Journal | null): EpochStatus {
  const op = epochOps(journal).at(-1);
  const charged = charges(journal);
  if (op === undefined) {
    return {
      epoch: null,
      phase: null,
      running: false,
      cohort: null,
      proposal: null,
      step: null,
      losses: [],
      evaluation: null,
      decision: null,
      charges: charged,
    };
  }
  const input = decodeCanonical(op.input!) as EpochInput;
  const log = new EventLog(journal);
  const name = `epoch-${input.epoch}`;
  const last = log.events(name).at(-1);
  const inst = log.instance(name);
  const state = (last ? parseJson(last.state) : inst ? parseJson(inst.initial) : null) as EpochState | null;
  const steps = journal.steps(op.opId);
  const result = (name: string) => steps.filter((s) => s.name === name).map((s) => parseJson(s.result));
  const proposed = result("propose").at(-1) as { data_root: string; proposal: string } | undefined;
  const attempts = result("train").flat() as unknown as StepAttempt[];
  const failed = op.status === "done" && !(decodeCanonical(op.result!) as Result).ok;
  let evaluation: EpochStatus["evaluation"] = null;
  if (state?.status === "evaluating" && state.evaluation_id !== null) {
    evaluation = {
      evaluation_id: state.evaluation_id,
      groups: scored(evaluatorJournal, state.evaluation_id),
    };
  }
  const decided = result("decision").at(-1) as { evaluation_id: string } | undefined;
  if (state?.status === "decided" && decided) {
    evaluation = {
      evaluation_id: decided.evaluation_id,
      groups: scored(evaluatorJournal, decided.evaluation_id),
    };
  }
  return {
    epoch: input.epoch,
    phase: failed ? "failed" : state?.status ?? "collecting",
    running: op.status === "begun",
    cohort: state !== null && "data_root" in state ? state.data_root : proposed?.data_root ?? null,
    proposal: proposed?.proposal ?? null,
    step: state?.status === "training"
      ? { settled: state.settled, steps: state.steps }
      : state?.status === "evaluating" || state?.status === "decided"
      ? { settled: attempts.filter((a) => a.outcome === "settled").length, steps: stepsOf(journal, name) }
      : null,
    losses: attempts.filter((a) => a.outcome === "settled").map((a) => a.loss ?? ""),
    evaluation,
    decision: state?.status === "decided"
      ? { outcome: state.outcome, reason: state.reason }
      : failed
      ? { outcome: "failed", reason: (decodeCanonical(op.result!) as Result).message ?? "" }
      : null,
    charges: charged,
  };
}

/** The step count the `activated` event of instance `name` recorded (0 when none). */
function stepsOf(journal: Journal, name: string): number {
  for (const e of new EventLog(journal).events(name)) {
    const ev = parseJson(e.event) as { type: string; steps?: number };
    if (ev.type === "activated") return ev.steps ?? 0;
  }
  return 0;
}

/** Score windows per group the chain committed for `evaluationId`, from the Evaluator's submissions. */
function scored(evaluatorJournal: Journal | null, evaluationId: string): Record<string, number> {
  const out = Object.fromEntries(GROUPS.map((g) => [g, 0]));
  if (evaluatorJournal === null) return out;
  const rows = evaluatorJournal.db.prepare(
    "SELECT intent FROM submissions WHERE status = 'committed' AND intent LIKE ?",
  ).all(`score:${evaluationId}:%`) as { intent: string }[];
  const offsets = new Map<string, Set<string>>();
  for (const { intent } of rows) {
    const [, , group, offset] = intent.split(":");
    if (group === undefined || offset === undefined || !(group in out)) continue;
    if (!offsets.has(group)) offsets.set(group, new Set());
    offsets.get(group)!.add(offset);
  }
  for (const [g, s] of offsets) out[g] = s.size;
  return out;
}

/** Every finished epoch, oldest first. */
export function epochHistory(journal: Journal): EpochHistoryRow[] {
  const rows: EpochHistoryRow[] = [];
  for (const op of epochOps(journal)) {
    if (op.status !== "done") continue;
    const input = decodeCanonical(op.input!) as EpochInput;
    const r = decodeCanonical(op.result!) as Result;
    if (!r.ok) {
      rows.push({
        epoch: input.epoch,
        outcome: "failed",
        reason: `${r.code}: ${r.message}`,
        cohort: null,
        steps: 0,
        attempts: 0,
        losses: [],
        decision: null,
        cost: null,
        charged_atoms: charges(journal).find((c) => c.epoch === input.epoch)?.atoms ?? null,
      });
      continue;
    }
    const v = r.value!;
    const settled = v.steps.filter((s) => s.outcome === "settled");
    rows.push({
      epoch: v.epoch,
      outcome: v.outcome,
      reason: v.reason,
      cohort: (v.cohort?.data_root as string | undefined) ?? null,
      steps: settled.length,
      attempts: v.steps.length,
      losses: settled.map((s) => s.loss ?? ""),
      decision: v.evaluation === null ? null : v.evaluation.promoted ? "promote" : "keep",
      cost: v.cost,
      charged_atoms: v.charged_atoms,
    });
  }
  return rows;
}
