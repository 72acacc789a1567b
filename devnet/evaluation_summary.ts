/**
 * The evaluations of a devnet run as its summary shows them, read from a validator's `/evaluation` only
 * (so a resumed devnet shows what one that never stopped shows): for each decided evaluation, oldest first,
 * the cohort it evaluated, the decision (`promote` or `keep`) and why, per gate group (retention, fresh) the
 * paired mean change in micronats and the gate's integers `S`, `Q`, `G` with `passed`, the serving root before
 * (the baseline) and after, the scores settled, and every rejected score with its reason.
 *
 * @example
 * ```ts
 * import { collectEvaluations } from "./evaluation_summary.ts";
 * // const evaluations = await collectEvaluations(new ChainView(rpc));
 * ```
 */
import { isObject, type JsonObject } from "../core/canonical.ts";
import type { ChainView } from "./chain_view.ts";

/** One gate group's result. */
export interface GateGroup extends JsonObject {
  S: string;
  Q: string;
  G: string;
  passed: boolean;
  /** The paired mean change S/n in micronats (exact decimal). */
  mean_change_micronats: string;
}

/** A rejected score claim and why. */
export interface RejectedScore extends JsonObject {
  claim_id: string;
  side: string;
  role: string;
  offset: number;
  reason: string | null;
}

/** One decided evaluation. */
export interface EvaluationOutcome extends JsonObject {
  evaluation_id: string;
  cohort: string;
  decision: "promote" | "keep";
  /** The ledger's reason (`gate`, `gate failed`, `expired`, ...). */
  reason: string;
  /** Per gate group; null when the evaluation was decided without the gate (its deadline). */
  groups: { retention: GateGroup | null; fresh: GateGroup | null };
  serving_root_before: string;
  serving_root_after: string;
  /** The candidate (the learning root the cohort's training ended at). */
  candidate: string;
  settled_scores: number;
  rejected: RejectedScore[];
}

function gateGroup(g: unknown): GateGroup | null {
  if (!isObject(g)) return null;
  return {
    S: String(g.S),
    Q: String(g.Q),
    G: String(g.G),
    passed: g.pass === true,
    mean_change_micronats: String(g.mean_change_micronats),
  };
}

/** One evaluation's answer (from `/evaluation`) as the summary shows it; null while it is not decided. */
export function evaluationOutcome(e: JsonObject): EvaluationOutcome | null {
  if (e.status !== "decided" || !isObject(e.decision)) return null;
  const d = e.decision;
  const gate = isObject(d.gate) ? d.gate : {};
  const scores = (e.scores ?? []) as JsonObject[];
  const promoted = d.promoted === true;
  return {
    evaluation_id: String(e.evaluation_id),
    cohort: String(e.cohort),
    decision: promoted ? "promote" : "keep",
    reason: String(d.reason),
    groups: { retention: gateGroup(gate.retention), fresh: gateGroup(gate.fresh) },
    serving_root_before: String(e.baseline),
    serving_root_after: String(promoted ? e.candidate : e.baseline),
    candidate: String(e.candidate),
    settled_scores: scores.filter((s) => s.status === "settled").length,
    rejected: scores.filter((s) => s.status === "rejected").map((s) => ({
      claim_id: String(s.claim_id),
      side: String(s.side),
      role: String(s.role),
      offset: Number(s.offset),
      reason: typeof s.reason === "string" ? s.reason : null,
    })),
  };
}

/** Every decided evaluation the chain retains, oldest first. */
export async function collectEvaluations(view: ChainView): Promise<EvaluationOutcome[]> {
  const facts = await view.get("/evaluation");
  if (!isObject(facts) || !Array.isArray(facts.recent)) return [];
  return (facts.recent as JsonObject[]).map(evaluationOutcome).filter((e) => e !== null).reverse();
}

/** The evaluations as text lines for a person. */
export function evaluationLines(evaluations: readonly EvaluationOutcome[]): string[] {
  const lines: string[] = [];
  for (const e of evaluations) {
    lines.push(`evaluation ${e.evaluation_id} of cohort ${e.cohort}: ${e.settled_scores} scores settled`);
    for (const role of ["retention", "fresh"] as const) {
      const g = e.groups[role];
      lines.push(
        g === null
          ? `  ${role}: no gate (${e.reason})`
          : `  ${role.padEnd(9)} mean change ${g.mean_change_micronats} µnat, S=${g.S} Q=${g.Q} G=${g.G} ${
            g.passed ? "passed" : "failed"
          }`,
      );
    }
    for (const r of e.rejected) {
      lines.push(
        `  rejected score ${r.claim_id} (${r.side} ${r.role} ${r.offset}): ${r.reason ?? "no reason"}`,
      );
    }
    lines.push(
      e.decision === "promote"
        ? `  decision: promote (${e.reason}); serving root ${e.serving_root_before} → ${e.serving_root_after}`
        : `  decision: keep (${e.reason}); serving root stays ${e.serving_root_after}`,
    );
  }
  return lines;
}
