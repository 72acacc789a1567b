/**
 * The evaluation query paths of the validator RPC (PROTOCOL §7, §13): `/evaluation` (the serving model, the
 * live evaluation and the retained ones, newest first), `/evaluation?id=<evaluation id>` (one of them) and
 * `/evaluation?score=<claim id>` (a score claim with its state and metadata, for referees). An evaluation's
 * answer carries every measurement (`measurements[side][role]`: window, document, loss, targets and the claim
 * that settled it), every score, and once decided the decision: promoted, why, and per role the gate's S, Q, G,
 * pass, the paired mean change S/n in micronats (exact) and each document's loss and q on both sides.
 * Unknown ids answer null (404 at the RPC). Queries read through a view and cannot write.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { fromHexFloat, toHexFloat } from "../../core/hex_float.ts";
import { isRoot } from "../../core/hex.ts";
import { EVAL_DOCUMENTS, GROUPS, layoutDocuments } from "../../workflows/evaluation.ts";
import { documentLoss, microQ } from "../../workflows/gate.ts";
import type { LedgerView } from "../state/accessors.ts";
import { type EvaluationRun, type EvaluationView, evaluationView } from "./store.ts";
import { ROLES, SIDES } from "./wire.ts";

/**
 * `S / n` as a decimal string of at most 5 decimals (exact for every allowed n: 2, 4, 8, 16 or 32 divide
 * 10^5 = 2^5 · 5^5).
 */
export function meanChange(s: bigint, n = BigInt(EVAL_DOCUMENTS)): string {
  const scaled = s * 100_000n / n; // exact for n dividing 32
  const sign = scaled < 0n ? "-" : "";
  const a = scaled < 0n ? -scaled : scaled;
  const frac = (a % 100_000n).toString().padStart(5, "0").replace(/0+$/, "");
  return `${sign}${a / 100_000n}${frac === "" ? "" : `.${frac}`}`;
}

function documents(run: EvaluationRun, side: "baseline" | "candidate", role: "retention" | "fresh") {
  const g = run.state.groups[`${side}_${role}`];
  const layout = run.state.layout[role];
  const docs: { loss: number; targets: number }[][] = Array.from(
    { length: layoutDocuments(layout) },
    () => [],
  );
  g.losses.forEach((l, i) => docs[layout[i]!]!.push({ loss: fromHexFloat(l), targets: g.targets[i]! }));
  return docs.map((w) => {
    if (w.length === 0) return null;
    const loss = documentLoss(w);
    return { loss: toHexFloat(loss), q: microQ(loss).toString() };
  });
}

function runAnswer(w: EvaluationView, run: EvaluationRun): JsonObject {
  const s = run.state;
  const scores: JsonObject[] = run.scores.map((c): JsonObject => {
    const e = w.score(c);
    if (!e) return { claim_id: c, status: "pruned" };
    const sc = e.state.scored;
    return {
      claim_id: c,
      owner: e.state.claim.owner,
      status: e.state.status,
      side: sc.side,
      role: sc.role,
      offset: sc.offset,
      windows: sc.losses.length,
      losses: [...sc.losses],
      ...(e.state.status === "rejected" ? { reason: e.state.reason } : {}),
    };
  });
  const settledBy = (side: string, role: string, window: number) =>
    scores.find((x) =>
      x.status === "settled" && x.side === side && x.role === role && (x.offset as number) <= window &&
      window < (x.offset as number) + (x.windows as number)
    )?.claim_id as string | undefined ?? null;
  const measurements: JsonObject = {};
  for (const side of SIDES) {
    const bySide: JsonObject = {};
    for (const role of ROLES) {
      const g = s.groups[`${side}_${role}`];
      bySide[role] = g.losses.map((loss, i) => ({
        window: i,
        document: s.layout[role][i]!,
        loss,
        targets: g.targets[i]!,
        claim_id: settledBy(side, role, i),
      }));
    }
    measurements[side] = bySide;
  }
  const groups: JsonObject = {};
  for (const g of GROUPS) {
    const role = g.endsWith("retention") ? "retention" : "fresh";
    groups[g] = {
      settled: s.groups[g].losses.length,
      total: s.layout[role].length,
      pending: s.groups[g].pending,
    };
  }
  let decision: JsonValue = null;
  if (s.status === "decided") {
    const gate: JsonObject = {};
    for (const role of ROLES) {
      const r = s.gate?.[role];
      gate[role] = r === undefined ? null : {
        ...r,
        n: layoutDocuments(s.layout[role]),
        mean_change_micronats: meanChange(BigInt(r.S), BigInt(layoutDocuments(s.layout[role]))),
        baseline: documents(run, "baseline", role),
        candidate: documents(run, "candidate", role),
      };
    }
    decision = { promoted: s.promoted, reason: s.reason, gate };
  }
  return {
    evaluation_id: run.id,
    cohort: run.cohort,
    status: s.status,
    opened: run.opened,
    ended: run.ended,
    expires: s.expires,
    baseline: s.baseline,
    candidate: s.candidate,
    windows: { retention: [...run.windows.retention], fresh: [...run.windows.fresh] },
    layout: { retention: [...s.layout.retention], fresh: [...s.layout.fresh] },
    groups,
    measurements,
    scores: scores as JsonValue,
    decision,
  };
}

/** Answers an evaluation query, or null when the path or id is unknown. */
export function answerEvaluationQuery(
  pathname: string,
  params: URLSearchParams,
  view: LedgerView,
): JsonValue | null {
  if (pathname !== "/evaluation") return null;
  const w = evaluationView(view);
  const scoreId = params.get("score");
  if (scoreId !== null) {
    const e = isRoot(scoreId) ? w.score(scoreId) : null;
    if (e === null) return null;
    return {
      claim_id: e.id,
      evaluation_id: e.evaluation_id,
      escrow: e.escrow,
      ended: e.ended,
      state: e.state as unknown as JsonObject,
      metadata: e.metadata,
    };
  }
  const evaluationId = params.get("id");
  if (evaluationId !== null) {
    const run = isRoot(evaluationId) ? w.run(evaluationId) : null;
    return run === null ? null : runAnswer(w, run);
  }
  const f = w.facts();
  const live = f?.live ? w.run(f.live) : null;
  const recent = w.history().reverse().map(([, e]) => runAnswer(w, w.run(e)!));
  return {
    serving: f ? { ...f.serving } : null,
    live: live === null ? null : runAnswer(w, live),
    pending_scores: f ? [...f.pending] : [],
    recent,
  };
}
