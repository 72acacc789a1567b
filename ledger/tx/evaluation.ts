/**
 * `open_evaluation {}`, `score {evaluation_id, side, role, offset, record_root, metadata}` and
 * `finish_evaluation {evaluation_id}` (PROTOCOL §7). The handlers check what the machines cannot see — the
 * latest cohort is trained and not yet evaluated, nothing else is live (`open_evaluation`); the evaluation, the
 * group, its order, the side's model and the record's graph checks against the ledger's own windows
 * (`score`) — then feed `workflows/evaluation.ts` and `workflows/score.ts` and apply their moves: a score locks
 * the claim bond and opens its challenge window, and mints nothing; `finish_evaluation` applies the integer gate
 * once all four groups have settled. Field lists are those of `ledger/evaluation/wire.ts`.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject } from "../../core/errors.ts";
import { type GroupName, type Layout, openEvaluation } from "../../workflows/evaluation.ts";
import { openScore, WINDOWS_PER_SCORE } from "../../workflows/score.ts";
import { dataWriter, evaluationDocuments } from "../data/store.ts";
import { advanceEvaluation } from "../evaluation/advance.ts";
import { checkScoreTx } from "../evaluation/check.ts";
import { assignedWindows } from "../evaluation/dispute.ts";
import { type EvaluationFacts, evaluationWriter } from "../evaluation/store.ts";
import { EVALUATION_TX_FIELDS, ROLES, SIDES } from "../evaluation/wire.ts";
import { applyMoves } from "../training/moves.ts";
import { trainingWriter } from "../training/store.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import { lifecycleOf, type TrainingKind } from "./training.ts";

function facts(state: LedgerWriter, servingRoot: string): EvaluationFacts {
  return evaluationWriter(state).facts() ??
    {
      live: null,
      pending: [],
      evaluated: null,
      serving: { model_root: servingRoot, evaluation: null, since: 0 },
      retained: 0,
    };
}

/** The `open_evaluation` kind: the evaluation id is the txid. */
export const openEvaluationTx: TrainingKind = {
  fields: EVALUATION_TX_FIELDS.open_evaluation,
  handle(ctx, txid) {
    const { state, env } = ctx;
    const what = "open evaluation";
    const l = lifecycleOf(trainingWriter(state), what);
    if ("ok" in l) return l;
    const d = dataWriter(state);
    const dl = d.lifecycle();
    if (!dl) return reject("invalid_transition", `Cannot ${what}: this chain has no data lifecycle`);
    const f = facts(state, l.serving_root);
    if (f.live !== null) return reject("busy", `Cannot ${what}: evaluation ${f.live} is live`);
    const cohort = dl.cohort === null ? null : d.cohort(dl.cohort);
    if (cohort === null || cohort.status !== "trained") {
      return reject(
        "invalid_transition",
        `Cannot ${what}: the latest cohort is ${cohort === null ? "none" : cohort.status}, expected trained`,
      );
    }
    if (f.evaluated === cohort.data_root) {
      return reject("invalid_transition", `Cannot ${what}: cohort ${cohort.data_root} was evaluated already`);
    }
    if (l.job !== null) return reject("busy", `Cannot ${what}: job ${l.job} is live`);
    const document = d.document(cohort.data_root)!;
    const layout: { retention: number[]; fresh: number[] } = { retention: [], fresh: [] };
    const windows: { retention: string[]; fresh: string[] } = { retention: [], fresh: [] };
    const seen = { retention: 0, fresh: 0 };
    for (const doc of document.documents) {
      if (doc.role !== "retention" && doc.role !== "fresh") continue;
      const k = seen[doc.role]++;
      for (const b of doc.batches) {
        layout[doc.role].push(k);
        windows[doc.role].push(b);
      }
    }
    const step = openEvaluation(
      {
        id: txid,
        baseline: l.serving_root,
        candidate: l.learning_root,
        data_root: cohort.data_root,
        layout: layout as Layout,
      },
      env,
      evaluationDocuments(dl),
    );
    if (!step.ok) return step;
    const w = evaluationWriter(state);
    w.setRun({
      id: txid,
      cohort: cohort.data_root,
      opened: env.height,
      ended: null,
      windows,
      scores: [],
      state: step.state,
    });
    w.setFacts({ ...f, live: txid, evaluated: cohort.data_root });
    return { ok: true };
  },
};

/** The `score` kind: the claim id is the txid. */
export const scoreTx: TrainingKind = {
  fields: EVALUATION_TX_FIELDS.score,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const w = evaluationWriter(state);
    const run = typeof body.evaluation_id === "string" ? w.run(body.evaluation_id) : null;
    if (run === null) {
      return reject("unknown_evaluation", `Cannot score: no evaluation ${String(body.evaluation_id)}`);
    }
    const s = run.state;
    if (s.status === "decided") {
      return reject("invalid_transition", `Cannot score evaluation ${run.id}: it is decided`);
    }
    if (env.height > s.expires) {
      return reject(
        "expired",
        `Cannot score evaluation ${run.id}: height is ${env.height}, expired after ${s.expires}`,
      );
    }
    const side = body.side as typeof SIDES[number], role = body.role as typeof ROLES[number];
    if (!SIDES.includes(side) || !ROLES.includes(role)) {
      return reject("bad_request", `Cannot score: side ${JSON.stringify(side)} role ${JSON.stringify(role)}`);
    }
    const name = `${side}_${role}` as GroupName;
    const group = s.groups[name];
    if (group.pending !== null) {
      return reject(
        "busy",
        `Cannot score ${name} of evaluation ${run.id}: score ${group.pending} is pending`,
      );
    }
    const settled = group.losses.length, total = s.layout[role].length;
    if (body.offset !== settled || settled >= total) {
      return reject(
        "out_of_order",
        `Cannot score ${name} of evaluation ${run.id}: offset is ${
          JSON.stringify(body.offset)
        }, expected ${settled} of ${total}`,
      );
    }
    const n = Math.min(WINDOWS_PER_SCORE, total - settled);
    const model = side === "baseline" ? s.baseline : s.candidate;
    const manifest = trainingWriter(state).manifest(model)!;
    const windows = assignedWindows(state, run, role, settled, n);
    const checked = checkScoreTx(body.metadata, body.record_root, model, manifest, windows);
    if ("ok" in checked) return checked;
    const opened = openScore({
      id: txid,
      owner: sender,
      stages: checked.traces.length + 1,
      evaluation_id: run.id,
      side,
      role,
      offset: settled,
      record_root: body.record_root as string,
      metadata_root: id(body.metadata as JsonValue),
      losses: checked.head.losses,
      targets: checked.head.targets,
    }, env);
    if (!opened.ok) return opened;
    const moved = applyMoves(state, opened.state.moves, 0, env.height);
    if (!moved.ok) return moved;
    const fed = advanceEvaluation(state, run, {
      type: "score",
      claim_id: txid,
      side,
      role,
      offset: settled,
      windows: n,
    }, env);
    if (!fed.ok) return fed;
    const after = w.run(run.id)!;
    w.setRun({ ...after, scores: [...after.scores, txid] });
    w.setScore({
      id: txid,
      evaluation_id: run.id,
      escrow: moved.escrow,
      metadata: body.metadata as JsonObject,
      ended: null,
      state: opened.state,
    });
    const f = w.facts()!;
    w.setFacts({ ...f, pending: [...f.pending, txid].sort() });
    return { ok: true };
  },
};

/** The `finish_evaluation` kind: applies the gate once every window of all four groups has settled. */
export const finishEvaluationTx: TrainingKind = {
  fields: EVALUATION_TX_FIELDS.finish_evaluation,
  handle(ctx) {
    const { state, env, body } = ctx;
    const w = evaluationWriter(state);
    const run = typeof body.evaluation_id === "string" ? w.run(body.evaluation_id) : null;
    if (run === null) {
      return reject(
        "unknown_evaluation",
        `Cannot finish evaluation: no evaluation ${String(body.evaluation_id)}`,
      );
    }
    if (run.state.status !== "decided" && env.height > run.state.expires) {
      return reject(
        "expired",
        `Cannot finish evaluation ${run.id}: height is ${env.height}, expired after ${run.state.expires}`,
      );
    }
    return advanceEvaluation(state, run, { type: "finish" }, env);
  },
};
