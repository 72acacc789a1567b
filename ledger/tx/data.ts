/**
 * `propose_data {data_root, metadata}` and `vote_data {proposal_id, approve}` (PROTOCOL §6). `propose_data`
 * needs no pending proposal and no cohort still training, then runs every document check of
 * `ledger/data/document.ts` against the chain's data facts before anything changes, snapshots the electorate
 * and feeds the cohort machine (which locks the claim bond); `vote_data` feeds the owner's vote to the
 * machine, which refuses an owner outside the snapshot or one that already voted. Activation and expiry are
 * block rules (`ledger/data/boundary.ts`). Field lists are those of `ledger/data/wire.ts`.
 */
import type { JsonObject } from "../../core/canonical.ts";
import { reject } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { configFromJson } from "../../kernels/config.ts";
import { proposeData } from "../../workflows/cohort.ts";
import { advanceProposal, electorateAt } from "../data/advance.ts";
import { checkCohortProposal } from "../data/document.ts";
import { dataWriter, evaluationDocuments } from "../data/store.ts";
import { DATA_TX_FIELDS } from "../data/wire.ts";
import { applyMoves } from "../training/moves.ts";
import { trainingWriter } from "../training/store.ts";
import type { TrainingKind } from "./training.ts";

/** The `propose_data` kind. */
export const proposeDataKind: TrainingKind = {
  fields: DATA_TX_FIELDS.propose_data,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const d = dataWriter(state);
    const l = d.lifecycle();
    if (!l) {
      return reject("invalid_transition", "Cannot propose data: this chain's genesis has no data lifecycle");
    }
    if (l.proposal !== null) {
      return reject("cohort_pending", `Cannot propose data: proposal ${l.proposal} is pending`);
    }
    const latest = l.cohort === null ? null : d.cohort(l.cohort);
    if (latest?.status === "training") {
      return reject("cohort_pending", `Cannot propose data: cohort ${latest.data_root} is still training`);
    }
    const t = trainingWriter(state);
    const model = t.manifest(t.lifecycle()!.serving_root)!;
    const checked = checkCohortProposal(body.data_root, body.metadata, {
      data_root: l.data_root,
      tokenizer_root: l.tokenizer_root,
      sources: d.sources(),
      cursors: l.cursors,
      config: configFromJson(model.config),
      consumed: d.consumed(),
      evaluation_documents: evaluationDocuments(l),
    });
    if (!checked.ok) return checked;
    const c = checked.value;
    const step = proposeData({
      id: txid,
      proposer: sender,
      data_root: c.root,
      previous: l.data_root,
      electorate: electorateAt(state, env.height),
      train_batches: c.train_batches,
      replay_pool: l.pool,
    }, env);
    if (!step.ok) return step;
    const moved = applyMoves(state, step.state.moves, 0, env.height);
    if (!moved.ok) return moved;
    const metadata = body.metadata as JsonObject;
    d.setDocument(c.root, c.document);
    for (const root of [...c.train_batches, ...c.retention_batches, ...c.fresh_batches]) {
      d.setBatch(root, metadata[root]!);
    }
    d.setProposal({ id: txid, escrow: moved.escrow, cursors: c.cursors, state: step.state });
    d.setLifecycle({ ...l, proposal: txid });
    return { ok: true };
  },
};

/** The `vote_data` kind. */
export const voteDataKind: TrainingKind = {
  fields: DATA_TX_FIELDS.vote_data,
  handle(ctx) {
    const { state, env, body, sender } = ctx;
    const proposal = isRoot(body.proposal_id) ? dataWriter(state).proposal(body.proposal_id) : null;
    if (!proposal) {
      return reject("unknown_proposal", `Cannot vote: no proposal ${JSON.stringify(body.proposal_id)}`);
    }
    if (typeof body.approve !== "boolean") {
      return reject(
        "invalid_body",
        `Cannot vote: approve is ${JSON.stringify(body.approve)}, expected a boolean`,
      );
    }
    return advanceProposal(state, proposal, { type: "vote", sender, approve: body.approve }, env);
  },
};
