/**
 * The training query paths of the validator RPC (PROTOCOL §13; answer shapes in `wire.ts`): `/lifecycle`
 * (with the `data` part of `ledger/data/query.ts`),
 * `/candidate`, `/claim?id=`, `/work?identity=`, `/manifest?root=`, `/batch?root=` and `/object/<root>`.
 * `/object/<root>` answers `{root, size, data}` here (data in base64); the RPC server sends the raw bytes.
 * Unknown ids and roots answer null (404 at the RPC). Queries read through a view and cannot write.
 */
import { Buffer } from "node:buffer";
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { isRoot } from "../../core/hex.ts";
import type { LedgerView } from "../state/accessors.ts";
import { type Job, trainingView } from "./store.ts";
import type { ClaimAnswer, ClaimView, LifecycleAnswer } from "./wire.ts";
import { dataLifecycleAnswer } from "../data/query.ts";
import { dataView } from "../data/store.ts";

function claimView(job: Job): ClaimView {
  return { claim_id: job.claim_id!, kind: job.kind, state: job.state as unknown as JsonObject };
}

/** Answers a training query (`pathname` and its search params), or null when the path or id is unknown. */
export function answerTrainingQuery(
  pathname: string,
  params: URLSearchParams,
  view: LedgerView,
  height: number,
): JsonValue | null {
  const t = trainingView(view);
  if (pathname === "/lifecycle") {
    const l = t.lifecycle();
    const job = l?.job ? t.job(l.job) : null;
    const reserved = job?.kind === "training" && job.state.status === "reserved";
    const data = dataLifecycleAnswer(view);
    const answer: LifecycleAnswer = {
      height,
      learning_root: l?.learning_root ?? null,
      serving_root: l?.serving_root ?? null,
      training_round: l?.training_round ?? 0,
      data_root: data?.data_root ?? l?.data_root ?? null,
      batches: l?.batches ?? 0,
      learning_rate: l?.learning_rate ?? null,
      clip: l?.clip ?? null,
      period: l?.period ?? { index: 0, steps: 0, growths: 0 },
      assignment: reserved ? job.state.assignment as never : null,
      claim: job && !reserved ? claimView(job) : null,
      data,
    };
    return answer;
  }
  if (pathname === "/candidate") {
    const l = t.lifecycle();
    if (!l) return null;
    return {
      learning_root: l.learning_root,
      serving_root: l.serving_root,
      manifest: t.manifest(l.learning_root) as unknown as JsonObject,
    };
  }
  if (pathname === "/claim") {
    const claimId = params.get("id");
    const job = isRoot(claimId) ? t.jobOfClaim(claimId) : null;
    if (!job || job.claim_id !== claimId) return null;
    const answer: ClaimAnswer = { ...claimView(job), metadata: job.metadata ?? {} };
    return answer;
  }
  if (pathname === "/work") {
    const identity = params.get("identity");
    if (!isRoot(identity)) return null;
    const claimId = t.paidBy(identity);
    return { identity, paid: claimId !== null, claim_id: claimId };
  }
  if (pathname === "/manifest") {
    const root = params.get("root");
    return isRoot(root) ? t.manifest(root) as unknown as JsonValue : null;
  }
  if (pathname === "/batch") {
    const root = params.get("root");
    if (!isRoot(root)) return null;
    return (t.batchByRoot(root)?.batch ?? dataView(view).batch(root)) as unknown as JsonValue ?? null;
  }
  const m = /^\/object\/([0-9a-f]{64})$/.exec(pathname);
  if (m) {
    const chunks = t.sealedChunks(m[1]!);
    if (!chunks) return null;
    const bytes = Buffer.concat(chunks.map((c) => Buffer.from(c, "base64")));
    return { root: m[1]!, size: bytes.length, data: bytes.toString("base64") };
  }
  return null;
}
