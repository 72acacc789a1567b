/**
 * The referee's check of one stage of a score claim (PROTOCOL §7.1): read the score's record from the chain
 * (`/evaluation?score=`), its assigned windows from the evaluation's own layout and the chain's copy of the
 * cohort's batches (never from the record), the side's manifest, fetch the stage's inputs — a partition's
 * components and input activation, or the head's embedding, final norm and final hidden state, no block —
 * from the referee's store, the workers or the chain, and replay it with `replayScore`. The answer is
 * `match`, `mismatch` (`forward output`, `window loss` or `next-token argmax`), `unavailable` (an input
 * nobody serves) or `error`.
 *
 * @example
 * ```ts
 * import { checkScoreStage } from "./check_score.ts";
 * // const v = await checkScoreStage({ chain, store, workers }, claimId, 2); // the head
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { PartitionTrace } from "../../kernels/forward_graph.ts";
import type { ScoreHead, ScoreRecord } from "../../kernels/score_record.ts";
import { replayScore, scoreNeeded } from "../../kernels/score_referee.ts";
import type { ChainClient } from "../common/chain.ts";
import { type CheckSources, fetchObject, type StageVerdict } from "./check.ts";

/** A score claim as the chain has it: its state, record, traces and head. */
export interface ScoreOnChain {
  readonly evaluation_id: string;
  readonly state: JsonObject;
  readonly record: ScoreRecord;
  readonly traces: PartitionTrace[];
  readonly head: ScoreHead;
}

/** The score `claimId` from the chain; `not_found` when the chain does not know it. */
export async function scoreRecordOf(chain: ChainClient, claimId: string): Promise<ScoreOnChain> {
  const s = await chain.score(claimId);
  if (s === null) {
    throw new ProtocolError("not_found", `Cannot check score ${claimId}: the chain does not know it`);
  }
  const state = s.state as JsonObject;
  const m = s.metadata as JsonObject;
  const root = (state.scored as { record_root: string }).record_root;
  const record = m[root] as unknown as ScoreRecord;
  const traces = record.traces.map((t) => m[t] as unknown as PartitionTrace);
  return {
    evaluation_id: s.evaluation_id as string,
    state,
    record,
    traces,
    head: m[record.head] as unknown as ScoreHead,
  };
}

/** Checks stage `stage` (partitions 0 … S−1, the head S) of score `claimId`. */
export async function checkScoreStage(
  src: CheckSources,
  claimId: string,
  stage: number,
): Promise<StageVerdict> {
  const s = await scoreRecordOf(src.chain, claimId);
  const e = await src.chain.evaluation(s.evaluation_id);
  if (e === null) return { verdict: "error", what: null, root: null, message: "the evaluation is gone" };
  const sc = s.state.scored as {
    side: "baseline" | "candidate";
    role: "retention" | "fresh";
    offset: number;
    losses: string[];
  };
  const roots = ((e.windows as JsonObject)[sc.role] as string[]).slice(
    sc.offset,
    sc.offset + sc.losses.length,
  );
  const windows = await Promise.all(roots.map((r) => src.chain.batch(r)));
  const manifest = await src.chain.manifest(e[sc.side] as string);
  const bytes = new Map<string, Uint8Array>();
  for (const root of scoreNeeded(manifest, s.traces, s.head, stage)) {
    const b = await fetchObject(src, root);
    if (b === null) return { verdict: "unavailable", what: null, root, message: `nobody serves ${root}` };
    bytes.set(root, b);
  }
  const v = replayScore({
    manifest,
    record: s.record,
    traces: s.traces,
    head: s.head,
    windows,
    stage,
    fetch: (r) => bytes.get(r),
  });
  if (v.verdict === "match") return { verdict: "match", what: null, root: null, message: "" };
  if (v.verdict === "mismatch") return { verdict: "mismatch", what: v.what, root: null, message: v.message };
  return { verdict: "error", what: null, root: null, message: v.message };
}
