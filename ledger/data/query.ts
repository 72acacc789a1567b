/**
 * The data query paths of the validator RPC (PROTOCOL §13; answer shapes in `wire.ts`): `/data[?root=]` (an
 * activated cohort, default the latest, with its scheduled batches' JSON in schedule order),
 * `/data/proposal[?id=]` (a proposal, default the pending one, with its document), `/data/consumed?…`
 * (whether a document id, batch root or source row was consumed, and by which cohort), and the `data` part of
 * `/lifecycle` (data root, cursors, pending proposal, latest cohort and its position). Unknown roots and ids
 * answer null (404 at the RPC). Queries read through a view and cannot write.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { isRoot } from "../../core/hex.ts";
import type { LedgerView } from "../state/accessors.ts";
import { trainingView } from "../training/store.ts";
import { cohortPosition } from "./schedule.ts";
import { type Cohort, dataView, evaluationDocuments } from "./store.ts";
import type {
  CohortAnswer,
  ConsumedAnswer,
  DataAnswer,
  DataLifecycleAnswer,
  ProposalAnswer,
} from "./wire.ts";

function cohortAnswer(view: LedgerView, c: Cohort): CohortAnswer {
  const round = trainingView(view).lifecycle()!.training_round;
  return {
    data_root: c.data_root,
    proposal: c.proposal,
    status: c.status,
    activated: c.activated,
    deadline: c.deadline,
    ended: c.ended,
    position: Math.min(cohortPosition(c, round), c.schedule.length),
    steps: c.schedule.length,
    schedule: c.schedule.map((s) => ({ batch: s.batch, kind: s.kind })),
  };
}

/** The `data` part of `/lifecycle`, or null on a chain without a data lifecycle. */
export function dataLifecycleAnswer(view: LedgerView): DataLifecycleAnswer | null {
  const d = dataView(view);
  const l = d.lifecycle();
  if (!l) return null;
  const c = l.cohort === null ? null : d.cohort(l.cohort);
  return {
    data_root: l.data_root,
    cursors: { ...l.cursors },
    evaluation_documents: evaluationDocuments(l),
    proposal: l.proposal,
    cohort: c === null ? null : cohortAnswer(view, c),
  };
}

/** `/data/consumed?document=<id>`, `?batch=<root>` or `?source=<name>&row=<n>`; null when malformed. */
function consumedAnswer(params: URLSearchParams, view: LedgerView): ConsumedAnswer | null {
  const document = params.get("document"), batch = params.get("batch");
  const source = params.get("source"), row = params.get("row");
  let key: string;
  if (isRoot(document) && params.size === 1) key = `document/${document}`;
  else if (isRoot(batch) && params.size === 1) key = `batch/${batch}`;
  else if (source !== null && row !== null && /^(0|[1-9][0-9]{0,15})$/.test(row) && params.size === 2) {
    key = `position/${source}#${row}`;
  } else return null;
  const by = dataView(view).consumedBy(key);
  return { consumed: by !== null, data_root: by };
}

/** Answers a data query, or null when the path, root or id is unknown. */
export function answerDataQuery(
  pathname: string,
  params: URLSearchParams,
  view: LedgerView,
): JsonValue | null {
  const d = dataView(view);
  const l = d.lifecycle();
  if (!l || !["/data", "/data/proposal", "/data/consumed"].includes(pathname)) return null;
  if (pathname === "/data/consumed") return consumedAnswer(params, view);
  if (pathname === "/data") {
    const root = params.get("root") ?? l.cohort;
    const c = isRoot(root) ? d.cohort(root) : null;
    if (c === null) return null;
    const answer: DataAnswer = {
      ...cohortAnswer(view, c),
      batches: c.schedule.map((s) => d.batch(s.batch) as unknown as JsonValue),
    };
    return answer;
  }
  const proposalId = params.get("id") ?? l.proposal;
  const p = isRoot(proposalId) ? d.proposal(proposalId) : null;
  if (p === null) return null;
  const answer: ProposalAnswer = {
    proposal_id: p.id,
    state: p.state as unknown as JsonObject,
    document: d.document(p.state.data_root)!,
  };
  return answer;
}
