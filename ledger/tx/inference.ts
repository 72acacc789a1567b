/**
 * `infer {model_root, provider, prompt_ids, max_tokens, max_price, expires_in}` and
 * `respond {job_id, record_root, metadata}` (PROTOCOL §8). The handlers check what the inference machine cannot
 * see — the serving root, the provider key, the vocabulary and the model's positions, the live-job bound for
 * `infer`; the job, its provider, its deadline and the generation record's graph checks for `respond` — then
 * feed the machine and apply its moves: `infer` escrows `max_price`, `respond` locks the provider bond and
 * opens the response's challenge window. Field lists are those of `ledger/inference/wire.ts`.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject } from "../../core/errors.ts";
import { configFromJson } from "../../kernels/config.ts";
import { type InferInput, requestInference } from "../../workflows/inference.ts";
import { advanceInference } from "../inference/advance.ts";
import { checkResponse } from "../inference/check.ts";
import { jobManifest } from "../inference/dispute.ts";
import { inferenceWriter, MAX_LIVE_JOBS } from "../inference/store.ts";
import { INFERENCE_TX_FIELDS } from "../inference/wire.ts";
import { applyMoves } from "../training/moves.ts";
import { trainingWriter } from "../training/store.ts";
import { isAccountIdCached } from "./account_ids.ts";
import type { TrainingKind } from "./training.ts";

/** The `infer` kind: the job id is the txid. */
export const infer: TrainingKind = {
  fields: INFERENCE_TX_FIELDS.infer,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const w = inferenceWriter(state);
    const t = trainingWriter(state);
    const facts = w.facts();
    const l = t.lifecycle();
    if (!facts || !l) return reject("wrong_model", "Cannot request inference: this chain serves no model");
    const step = requestInference({
      id: txid,
      requester: sender,
      model_root: body.model_root,
      provider: body.provider,
      prompt_ids: body.prompt_ids,
      max_tokens: body.max_tokens,
      max_price: body.max_price,
      expires_in: body.expires_in,
    } as unknown as InferInput, env);
    if (!step.ok) return step;
    if (!isAccountIdCached(body.provider)) {
      return reject("invalid_inference", "Cannot request inference: provider is not an account id");
    }
    if (body.model_root !== l.serving_root) {
      return reject(
        "wrong_model",
        `Cannot request inference: model_root is ${body.model_root}, the serving root is ${l.serving_root}`,
      );
    }
    const config = configFromJson(t.manifest(l.serving_root)!.config as unknown as JsonValue);
    const ids = body.prompt_ids as number[];
    const over = ids.find((x) => x >= config.vocab_size);
    if (over !== undefined) {
      return reject(
        "invalid_inference",
        `Cannot request inference: prompt id ${over} is not below the vocabulary of ${config.vocab_size}`,
      );
    }
    const positions = ids.length + (body.max_tokens as number) - 1;
    if (positions > config.max_position_embeddings) {
      return reject(
        "invalid_inference",
        `Cannot request inference: ${positions} positions, the model has ${config.max_position_embeddings}`,
      );
    }
    if (facts.live.length >= MAX_LIVE_JOBS) {
      return reject(
        "busy",
        `Cannot request inference: ${facts.live.length} jobs are live, at most ${MAX_LIVE_JOBS}`,
      );
    }
    const balance = state.account(sender).balance;
    if (balance < step.state.job.max_price) {
      return reject(
        "insufficient_funds",
        `Cannot request inference: balance after fee is ${balance}, max_price is ${step.state.job.max_price}`,
      );
    }
    const moved = applyMoves(state, step.state.moves, 0, env.height);
    if (!moved.ok) return moved;
    w.setJob({ id: txid, escrow: moved.escrow, claims: [], metadata: null, ended: null, state: step.state });
    w.setFacts({ ...facts, live: [...facts.live, txid].sort() });
    return { ok: true };
  },
};

/** The `respond` kind: the claim id is the txid. */
export const respond: TrainingKind = {
  fields: INFERENCE_TX_FIELDS.respond,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const w = inferenceWriter(state);
    const job = typeof body.job_id === "string" ? w.job(body.job_id) : null;
    if (!job) return reject("unknown_job", `Cannot respond: no inference job ${String(body.job_id)}`);
    const s = job.state;
    if (sender !== s.job.provider) {
      return reject(
        "not_owner",
        `Cannot respond to inference job ${job.id}: sender is ${sender}, provider is ${s.job.provider}`,
      );
    }
    if (s.status === "responded") {
      return reject("busy", `Cannot respond to inference job ${job.id}: response ${s.claim.id} is pending`);
    }
    if (s.status !== "requested" && s.status !== "reopened") {
      return reject("invalid_transition", `Cannot respond to inference job ${job.id}: it is ${s.status}`);
    }
    const last = s.job.expires - env.params.challenge_blocks;
    if (env.height >= last) {
      return reject(
        "expired",
        `Cannot respond to inference job ${job.id}: height is ${env.height}, responses close at ${last}`,
      );
    }
    const checked = checkResponse(
      body.metadata,
      body.record_root,
      s.job,
      jobManifest(trainingWriter(state), job),
      w.facts()!.eos_id,
    );
    if ("ok" in checked) return checked;
    const r = advanceInference(state, job, {
      type: "respond",
      sender,
      claim_id: txid,
      stages: checked.traces.length + 1,
      record_root: body.record_root as string,
      metadata_root: id(body.metadata as JsonValue),
      tokens: checked.record.tokens.length,
    }, env);
    if (!r.ok) return r;
    const stored = w.job(job.id)!;
    w.setJob({ ...stored, claims: [...stored.claims, txid], metadata: body.metadata as JsonObject });
    w.setClaimJob(txid, job.id);
    return { ok: true };
  },
};
