/**
 * The pending claim a `challenge`, `upload`, `seal` or `resolve` is about, whatever lifecycle made it: the live
 * training step or growth (`ledger/training/`), a pending inference response (`ledger/inference/`) or a
 * pending score claim (`ledger/evaluation/`). Each
 * gives the dispute handlers the same few operations, so the claim phase of PROTOCOL §5 is written once.
 */
import { reject, type Rejection } from "../../core/errors.ts";
import type { Verdict } from "../../kernels/referee.ts";
import type { Challenge, Claim, ClaimEvent } from "../../workflows/_claim.ts";
import { growth } from "../../workflows/growth.ts";
import { training } from "../../workflows/training.ts";
import { inference } from "../../workflows/inference.ts";
import { score } from "../../workflows/score.ts";
import { advanceScore, scoreEnded } from "../evaluation/advance.ts";
import { scoreFraudNeeded, scoreObjects, scoreVerdict } from "../evaluation/dispute.ts";
import { evaluationWriter } from "../evaluation/store.ts";
import { advanceInference } from "../inference/advance.ts";
import { jobManifest, responseNeeded, responseObjects, responseVerdict } from "../inference/dispute.ts";
import { inferenceWriter } from "../inference/store.ts";
import type { LedgerWriter } from "../state/accessors.ts";
import { advanceJob } from "../training/advance.ts";
import { claimChunkRoot, disputeObjects, fraudNeeded, refereeVerdict } from "../training/dispute.ts";
import { trainingWriter } from "../training/store.ts";
import type { HandlerResult, LedgerEnv } from "./context.ts";
import { lifecycleOf } from "./training.ts";

/** A pending claim under dispute. */
export interface DisputeTarget {
  readonly claimId: string;
  readonly claim: Claim;
  /** Feeds a claim-phase event to the claim's lifecycle machine and applies its moves. */
  advance(event: ClaimEvent): HandlerResult;
  /** Every check of a `resolve` by `sender` (fraud challenge, all sealed, deadline) without the referee. */
  dryResolve(sender: string): HandlerResult;
  /** Whether a fraud challenge names a block and phase (a training step's stages) or neither (the rest). */
  readonly pinpointed: boolean;
  /**
   * The sorted objects a fraud challenge of `stage` (and, pinpointed, of `block` in `phase`) needs; null when
   * the block and phase name nothing of the stage.
   */
  fraudNeeded(stage: number, block: unknown, phase: unknown): string[] | null;
  /** The objects an availability challenge may name. */
  objects(): Set<string>;
  /** The referee's verdict on the sealed bytes of the live fraud challenge. */
  verdict(c: Challenge): Verdict;
  /**
   * The chunk root the claim commits for `root` (in stage `stage`'s trace, when given): a training step's
   * traces key their objects' chunk roots (PROTOCOL §10.4); null for every other claim and object.
   */
  chunkRootOf(root: string, stage?: number): string | null;
}

const LIVE = new Set(["claimed", "challenged", "uploading", "resolving"]);

/** The pending claim `claimId`, or `invalid_transition` (or `no_batch`) when there is none. */
export function disputeTarget(
  state: LedgerWriter,
  claimId: unknown,
  env: LedgerEnv,
  what: string,
): DisputeTarget | Rejection {
  const t = trainingWriter(state);
  const i = inferenceWriter(state);
  const answered = typeof claimId === "string" ? i.jobOfClaim(claimId) : null;
  if (answered) {
    const s = answered.state;
    if (s.status !== "responded" || s.claim.id !== claimId) {
      return reject("invalid_transition", `Cannot ${what}: claim ${claimId} is not pending`);
    }
    const manifest = jobManifest(t, answered);
    return {
      claimId: claimId as string,
      claim: s.claim,
      advance: (event) => advanceInference(state, answered, event, env),
      dryResolve: (sender) => dry(inference.apply(s, { type: "resolve", sender, verdict: "match" }, env)),
      pinpointed: false,
      fraudNeeded: (stage) => responseNeeded(answered, manifest, stage),
      objects: () => responseObjects(answered),
      verdict: (c) => responseVerdict(t, answered, manifest, c),
      chunkRootOf: () => null,
    };
  }
  const scored = typeof claimId === "string" ? evaluationWriter(state).score(claimId) : null;
  if (scored) {
    if (scoreEnded(scored)) {
      return reject("invalid_transition", `Cannot ${what}: claim ${claimId} is not pending`);
    }
    return {
      claimId: scored.id,
      claim: scored.state.claim,
      advance: (event) => advanceScore(state, scored, event, env),
      dryResolve: (sender) =>
        dry(score.apply(scored.state, { type: "resolve", sender, verdict: "match" }, env)),
      pinpointed: false,
      fraudNeeded: (stage) => scoreFraudNeeded(state, scored, stage),
      objects: () => scoreObjects(scored),
      verdict: (c) => scoreVerdict(t, scored, c),
      chunkRootOf: () => null,
    };
  }
  const l = lifecycleOf(t, what);
  if ("ok" in l) return l;
  const job = l.job === null ? null : t.job(l.job);
  if (!job || job.claim_id !== claimId || !LIVE.has(job.state.status)) {
    return reject("invalid_transition", `Cannot ${what}: claim ${String(claimId)} is not pending`);
  }
  const s = job.state;
  return {
    claimId: job.claim_id!,
    claim: ("claim" in s ? s.claim : null)!,
    advance: (event) => advanceJob(state, job, event, env),
    dryResolve: (sender) =>
      dry(
        job.kind === "training"
          ? training.apply(job.state, { type: "resolve", sender, verdict: "match" }, env)
          : growth.apply(job.state, { type: "resolve", sender, verdict: "match" }, env),
      ),
    pinpointed: job.kind === "training",
    fraudNeeded: (stage, block, phase) => fraudNeeded(t, job, stage, block, phase),
    objects: () => disputeObjects(t, job),
    verdict: (c) => refereeVerdict(t, job, c),
    chunkRootOf: (root, stage) => claimChunkRoot(t, job, root, stage),
  };
}

function dry(step: { ok: true } | Rejection): HandlerResult {
  return step.ok ? { ok: true } : step;
}
