/**
 * The paid inference lifecycle (PROTOCOL §8): `requested → responded → settled | refuted → reopened | expired`.
 *
 * `requestInference` escrows `max_price`. Only the named provider may `respond`, strictly before
 * `expires − challenge_blocks`; a response is a claim (it locks `provider_bond` and opens a challenge window)
 * and stays `responded` while challenges run. Accepted: the provider is paid `tokens · price_per_token` from the
 * escrow and the rest is refunded. Refuted (a mismatch verdict or an unanswered availability challenge): the
 * provider is slashed and unpaid, and the next block reopens the job. Past `expires` unanswered the escrow is
 * refunded (the transaction fees are not).
 *
 * @example
 * ```ts
 * import { inference, requestInference } from "./inference.ts";
 * import { DEVNET_PARAMS } from "./params.ts";
 * const env = { height: 1, time: 0, params: DEVNET_PARAMS };
 * const job = requestInference({ id: "1".repeat(64), requester: "u", model_root: "2".repeat(64), provider: "p", prompt_ids: [1, 2], max_tokens: 4, max_price: 400, expires_in: 50 }, env);
 * if (job.ok) inference.apply(job.state, { type: "tick" }, { ...env, height: 52 }); // expired, 400 refunded
 * ```
 */
import { isRoot } from "../core/hex.ts";
import { reject } from "../core/errors.ts";
import { MAX_PROMPT_TOKENS, MIN_PROMPT_TOKENS } from "../core/limits.ts";
import { defineMachine, type MachineEnv, type Step } from "./machine.ts";
import { lock, type Move, nonZero, release } from "./money.ts";
import type { WorkflowParams } from "./params.ts";
import { type Claim, type ClaimEvent, openClaim, stepClaim } from "./_claim.ts";

/** Most new tokens one request may ask for. */
export const MAX_NEW_TOKENS = 8;

/** The request as escrowed. */
export type Job = {
  readonly id: string;
  readonly requester: string;
  readonly model_root: string;
  readonly provider: string;
  readonly prompt_ids: readonly number[];
  readonly max_tokens: number;
  readonly max_price: number;
  /** The price per token when the request was made; the payment uses it. */
  readonly price_per_token: number;
  readonly expires: number;
};

/** A provider's response: the generation record and how many tokens it produced. */
export type Response = {
  readonly record_root: string;
  readonly metadata_root: string;
  readonly tokens: number;
};

/** Every state of an inference job. */
export type InferenceState =
  | { readonly status: "requested" | "reopened" | "expired"; readonly job: Job; readonly moves: Move[] }
  | {
    readonly status: "responded" | "settled";
    readonly job: Job;
    readonly response: Response;
    readonly claim: Claim;
    readonly moves: Move[];
  }
  | {
    readonly status: "refuted";
    readonly job: Job;
    readonly response: Response;
    readonly claim: Claim;
    readonly reason: string;
    readonly moves: Move[];
  };

/** `respond`: the ledger has checked the generation record (greedy, EOS or max_tokens) and counted `tokens`. */
export type RespondEvent = {
  readonly type: "respond";
  readonly sender: string;
  readonly claim_id: string;
  /** Partitions of the generation's forward graph that can be challenged. */
  readonly stages: number;
} & Response;

/** Every event of an inference job. */
export type InferenceEvent = RespondEvent | ClaimEvent;

/** A checked `infer` (the ledger checks the serving root, vocabulary and the live-job bound). */
export type InferInput = Omit<Job, "price_per_token" | "expires"> & { readonly expires_in: number };

/** Creates the `requested` state: escrows `max_price`, `expires = H + expires_in`. */
export function requestInference(input: InferInput, env: MachineEnv<WorkflowParams>): Step<InferenceState> {
  const p = env.params;
  const bad = (why: string) => reject("invalid_inference", `Cannot request inference: ${why}`);
  const n = input.prompt_ids.length;
  if (
    n < MIN_PROMPT_TOKENS || n > MAX_PROMPT_TOKENS ||
    !input.prompt_ids.every((t) => Number.isSafeInteger(t) && t >= 0)
  ) {
    return bad(`${n} prompt ids, expected ${MIN_PROMPT_TOKENS}-${MAX_PROMPT_TOKENS} non-negative integers`);
  }
  if (!Number.isSafeInteger(input.max_tokens) || input.max_tokens < 1 || input.max_tokens > MAX_NEW_TOKENS) {
    return bad(`max_tokens is ${input.max_tokens}, expected 1-${MAX_NEW_TOKENS}`);
  }
  const least = input.max_tokens * p.price_per_token;
  if (!Number.isSafeInteger(input.max_price) || input.max_price < least) {
    return bad(`max_price is ${input.max_price}, expected at least ${least}`);
  }
  if (
    !Number.isSafeInteger(input.expires_in) || input.expires_in < p.min_inference_blocks ||
    input.expires_in > p.max_inference_blocks
  ) {
    return bad(
      `expires_in is ${input.expires_in}, expected ${p.min_inference_blocks}-${p.max_inference_blocks}`,
    );
  }
  if (!isRoot(input.id) || !isRoot(input.model_root)) return bad("a root is not 64 lowercase hex");
  const { expires_in, ...rest } = input;
  const job: Job = {
    ...rest,
    prompt_ids: [...input.prompt_ids],
    price_per_token: p.price_per_token,
    expires: env.height + expires_in,
  };
  return {
    ok: true,
    state: { status: "requested", job, moves: nonZero([lock(input.requester, input.max_price)]) },
  };
}

function refundEscrow(job: Job): Move[] {
  return nonZero([release(job.requester, job.max_price)]);
}

/** The inference machine. */
export const inference = defineMachine<InferenceState, InferenceEvent, WorkflowParams>({
  name: "inference",
  version: 1,
  states: ["requested", "responded", "settled", "refuted", "reopened", "expired"],
  events: ["respond", "challenge", "upload", "seal", "resolve", "tick"],
  edges: [
    { from: "requested", event: "respond", to: "responded" },
    { from: "requested", event: "tick", to: "expired" },
    { from: "responded", event: "challenge", to: "responded" },
    { from: "responded", event: "upload", to: "responded" },
    { from: "responded", event: "seal", to: "responded" },
    { from: "responded", event: "resolve", to: "responded" },
    { from: "responded", event: "resolve", to: "refuted" },
    { from: "responded", event: "tick", to: "responded" },
    { from: "responded", event: "tick", to: "settled" },
    { from: "responded", event: "tick", to: "refuted" },
    { from: "responded", event: "tick", to: "expired" },
    { from: "refuted", event: "tick", to: "reopened" },
    { from: "refuted", event: "tick", to: "expired" },
    { from: "reopened", event: "respond", to: "responded" },
    { from: "reopened", event: "tick", to: "expired" },
  ],
  transition(state, event, env): Step<InferenceState> {
    const h = env.height;
    const job = state.job;
    switch (state.status) {
      case "settled":
      case "expired":
        return reject(
          "invalid_transition",
          `Cannot ${event.type} inference job ${job.id}: it is ${state.status}`,
        );
      case "refuted":
        if (event.type !== "tick") {
          return reject(
            "invalid_transition",
            `Cannot ${event.type} inference job ${job.id}: it is refuted and reopens next block`,
          );
        }
        return h > job.expires
          ? { ok: true, state: { status: "expired", job, moves: refundEscrow(job) } }
          : { ok: true, state: { status: "reopened", job, moves: [] } };
      case "requested":
      case "reopened":
        if (event.type === "tick") {
          if (h <= job.expires) {
            return reject(
              "invalid_transition",
              `Cannot tick inference job ${job.id}: nothing is due at height ${h}, expires after ${job.expires}`,
            );
          }
          return { ok: true, state: { status: "expired", job, moves: refundEscrow(job) } };
        }
        if (event.type !== "respond") {
          return reject(
            "invalid_transition",
            `Cannot ${event.type} inference job ${job.id}: no response is pending`,
          );
        }
        return respond(job, event, env);
      case "responded": {
        if (event.type === "respond") {
          return reject(
            "busy",
            `Cannot respond to inference job ${job.id}: response ${state.claim.id} is pending`,
          );
        }
        const r = stepClaim(state.claim, event, h, env.params);
        if (!r.ok) return r;
        const base = { job, response: state.response, claim: r.claim };
        switch (r.outcome) {
          case "live":
            return { ok: true, state: { status: "responded", ...base, moves: r.moves } };
          case "accepted": {
            const pay = state.response.tokens * job.price_per_token;
            const moves = nonZero([
              ...r.moves,
              release(job.provider, pay),
              release(job.requester, job.max_price - pay),
            ]);
            return { ok: true, state: { status: "settled", ...base, moves } };
          }
          case "rejected":
            return { ok: true, state: { status: "refuted", ...base, reason: r.reason, moves: r.moves } };
          case "expired":
            return { ok: true, state: { status: "expired", job, moves: [...r.moves, ...refundEscrow(job)] } };
        }
      }
    }
  },
});

function respond(job: Job, ev: RespondEvent, env: MachineEnv<WorkflowParams>): Step<InferenceState> {
  const h = env.height;
  const p = env.params;
  if (ev.sender !== job.provider) {
    return reject(
      "not_owner",
      `Cannot respond to inference job ${job.id}: sender is ${ev.sender}, provider is ${job.provider}`,
    );
  }
  const last = job.expires - p.challenge_blocks;
  if (h >= last) {
    return reject(
      "expired",
      `Cannot respond to inference job ${job.id}: height is ${h}, responses close at ${last}`,
    );
  }
  if (!Number.isSafeInteger(ev.tokens) || ev.tokens < 1 || ev.tokens > job.max_tokens) {
    return reject(
      "invalid_inference",
      `Cannot respond to inference job ${job.id}: ${ev.tokens} tokens, expected 1-${job.max_tokens}`,
    );
  }
  if (
    ![ev.claim_id, ev.record_root, ev.metadata_root].every(isRoot) || !Number.isSafeInteger(ev.stages) ||
    ev.stages < 1
  ) {
    return reject(
      "invalid_inference",
      `Cannot respond to inference job ${job.id}: a root or the stage count is malformed`,
    );
  }
  const claim = openClaim(
    { id: ev.claim_id, owner: job.provider, bond: p.provider_bond, stages: ev.stages, expires: job.expires },
    h,
    p,
  );
  const response: Response = {
    record_root: ev.record_root,
    metadata_root: ev.metadata_root,
    tokens: ev.tokens,
  };
  return {
    ok: true,
    state: { status: "responded", job, response, claim, moves: [lock(job.provider, p.provider_bond)] },
  };
}
