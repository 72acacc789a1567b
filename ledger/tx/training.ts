/**
 * `reserve {parent, round, workers}` and `claim {record_root, metadata, workers, data_root, sequence_index}`
 * (PROTOCOL §5). The handlers check what the training machine cannot see (the learning root, round, period
 * budget and the batch the schedule binds (`ledger/data/schedule.ts`) for `reserve`; ownership, metadata, receipts, graph checks and the paid-work index for
 * `claim`), then feed the machine and apply its moves. Field lists are those of `ledger/training/wire.ts`.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { reserve as reserveMachine } from "../../workflows/training.ts";
import { assignedBatch, reservedBatch } from "../data/schedule.ts";
import { advanceJob } from "../training/advance.ts";
import { checkClaim } from "../training/claim_check.ts";
import { applyMoves } from "../training/moves.ts";
import { type Lifecycle, periodAt, type TrainingWriter, trainingWriter } from "../training/store.ts";
import { TRAINING_TX_FIELDS } from "../training/wire.ts";
import { isAccountIdCached } from "./account_ids.ts";
import type { HandlerResult, TxContext } from "./context.ts";

/** A transaction kind whose handler also needs the transaction id (it names the job or the claim). */
export interface TrainingKind {
  readonly fields: readonly string[];
  readonly handle: (ctx: TxContext, txid: string) => HandlerResult;
}

/** The training facts, or `no_batch` on a chain whose genesis has no training section. */
export function lifecycleOf(t: TrainingWriter, what: string): Lifecycle | Rejection {
  const l = t.lifecycle();
  if (!l) return reject("no_batch", `Cannot ${what}: this chain's genesis has no training section`);
  return l;
}

/** The `reserve` kind. */
export const reserve: TrainingKind = {
  fields: TRAINING_TX_FIELDS.reserve,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const t = trainingWriter(state);
    const l = lifecycleOf(t, "reserve");
    if ("ok" in l) return l;
    if (l.job !== null) return reject("busy", `Cannot reserve: job ${l.job} is live`);
    const period = periodAt(l, env.height, env.params.period_blocks);
    if (period.steps >= env.params.steps_per_period) {
      return reject(
        "budget_exhausted",
        `Cannot reserve: ${period.steps} steps paid in period ${period.index}, at most ${env.params.steps_per_period}`,
      );
    }
    if (body.parent !== l.learning_root) {
      return reject(
        "wrong_parent",
        `Cannot reserve: parent is ${body.parent}, learning root is ${l.learning_root}`,
      );
    }
    if (body.round !== l.training_round) {
      return reject(
        "wrong_round",
        `Cannot reserve: round is ${body.round}, training round is ${l.training_round}`,
      );
    }
    const workers = body.workers;
    if (!Array.isArray(workers) || !workers.every((w) => isAccountIdCached(w))) {
      return reject("invalid_workers", "Cannot reserve: workers is not a list of account ids");
    }
    const bound = reservedBatch(state, l, env.height);
    if ("ok" in bound) return bound;
    const step = reserveMachine({ id: txid, owner: sender, workers: workers as string[], ...bound }, env);
    if (!step.ok) return step;
    const moved = applyMoves(state, step.state.moves, 0, env.height);
    if (!moved.ok) return moved;
    t.setJob({
      kind: "training",
      id: txid,
      claim_id: null,
      parent: l.learning_root,
      escrow: moved.escrow,
      metadata: null,
      state: step.state,
    });
    t.setLifecycle({ ...l, period, job: txid });
    return { ok: true };
  },
};

/** The `claim` kind. */
export const claim: TrainingKind = {
  fields: TRAINING_TX_FIELDS.claim,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const t = trainingWriter(state);
    const l = lifecycleOf(t, "claim");
    if ("ok" in l) return l;
    const job = l.job === null ? null : t.job(l.job);
    if (!job || job.kind !== "training" || job.state.status !== "reserved") {
      return reject("invalid_transition", `Cannot claim: no assignment is reserved (live job ${l.job})`);
    }
    const a = job.state.assignment;
    if (sender !== a.owner) {
      return reject("not_owner", `Cannot claim assignment ${a.id}: sender is ${sender}, owner is ${a.owner}`);
    }
    if (env.height > a.expires) {
      return reject(
        "expired",
        `Cannot claim assignment ${a.id}: height is ${env.height}, expired after ${a.expires}`,
      );
    }
    const parent = t.manifest(job.parent)!;
    const batch = assignedBatch(state, a);
    const checked = checkClaim(body.metadata, body.record_root, {
      chainId: ctx.chainId,
      assignment: a,
      round: l.training_round,
      parent,
      batch,
      learningRate: l.learning_rate,
      clip: l.clip,
    });
    if ("ok" in checked) return checked;
    const paidBy = t.paidBy(checked.identity);
    if (paidBy !== null) {
      return reject("already_paid", `Cannot claim: work ${checked.identity} was paid by claim ${paidBy}`);
    }
    const workers = body.workers;
    if (!Array.isArray(workers) || !workers.every((w) => typeof w === "string")) {
      return reject("invalid_workers", "Cannot claim: workers is not a list of account ids");
    }
    const r = advanceJob(state, job, {
      type: "claim",
      sender,
      claim_id: txid,
      workers: workers as string[],
      data_root: body.data_root as string,
      sequence_index: body.sequence_index as number,
      record_root: body.record_root as string,
      model_root: checked.record.model_root,
      work_identity: checked.identity,
      metadata_root: id(body.metadata as JsonValue),
    }, env);
    if (!r.ok) return r;
    const stored = t.job(job.id)!;
    if (stored.kind === "training") {
      t.setJob({ ...stored, claim_id: txid, metadata: body.metadata as JsonObject });
    }
    t.setClaimJob(txid, job.id);
    t.setManifest(checked.record.model_root, checked.candidate);
    return { ok: true };
  },
};
