/**
 * The paying client of paid inference (PROTOCOL §8): one question from text to a verified, settled answer.
 *
 * It reads the serving root and its manifest from the chain, loads the codec the manifest pins from the local
 * object store, renders the question as one user message with the codec's bounded chat template (control
 * tokens and prompts outside 2–192 tokens are refused: `invalid_conversation`), signs `infer` and submits it
 * through the lost-acknowledgement-safe submitter (an unsettled `infer` from an earlier run is settled first,
 * with its journaled bytes), then follows the job until it ends: responded, challenged, refuted and
 * reopened, settled or expired. The answer is the settled record's tokens, decoded (the EOS id dropped); what
 * was paid and refunded is computed from the job's terms and checked against the requester's balance.
 *
 * @example
 * ```ts
 * import { ask } from "./ask.ts";
 * // const a = await ask({ chain, key, journal, store, progress: console.error }, { provider, prompt: "What is 2+2?" });
 * // a.answer, a.tokens, a.paid, a.refunded
 * ```
 */
import { decodeCanonical, type JsonObject } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { ObjectStore } from "../../core/object_store.ts";
import { txid } from "../../ledger/envelope.ts";
import type { AccountKey } from "../../ledger/keys.ts";
import type { InferFields } from "../../ledger/inference/wire.ts";
import { loadCodec } from "../../text/codec.ts";
import { encodePrompt } from "../../text/conversation.ts";
import type { InferenceState } from "../../workflows/inference.ts";
import type { ChainClient } from "../common/chain.ts";
import { submitSettled } from "../common/publish.ts";
import type { Journal } from "../runtime/journal.ts";
import { Submitter } from "../runtime/submit.ts";

/** Where the client works. */
export interface AskSetup {
  readonly chain: ChainClient;
  readonly key: AccountKey;
  readonly journal: Journal;
  /** Holds the codec of the served model (its backend and manifest). */
  readonly store: ObjectStore;
  /** Receives one line each time the job changes. */
  readonly progress: (line: string) => void;
  /** Pause between looks at the job (default 250 ms). */
  readonly pollMs?: number;
}

/** One question. */
export interface Question {
  readonly provider: string;
  readonly prompt: string;
  /** Default: the chain's most (8). */
  readonly maxTokens?: number;
  /** Default: maxTokens × price_per_token. */
  readonly maxPrice?: number;
  /** Default: 10 challenge windows, within the chain's bounds. */
  readonly expiresIn?: number;
  /**
   * An idempotency key: the same key (with the same provider and prompt) resumes the question already paid
   * instead of paying again. Default: a fresh random key (every call is a new question).
   */
  readonly request?: string;
}

/** The outcome of one paid question. */
export interface AskResult extends JsonObject {
  job_id: string;
  status: "settled" | "expired";
  prompt: string;
  prompt_ids: number[];
  answer: string;
  tokens: number[];
  paid: number;
  refunded: number;
  /** Responses the job received (more than one after a refutation). */
  responses: number;
  height: number;
}

/** Asks, pays, waits and returns the settled answer (see the module comment). */
export async function ask(setup: AskSetup, q: Question): Promise<AskResult> {
  const p = await payQuestion(setup, q);
  return await followJob(setup, p);
}

/** A question paid for: its job on the chain, and how to read the answer. */
export interface PaidQuestion {
  readonly jobId: string;
  readonly prompt: string;
  readonly prompt_ids: number[];
  readonly decode: (ids: number[]) => string;
}

/**
 * Renders, signs and submits the `infer` of `q` and returns its job once committed. With `q.request`, a
 * question already paid under that key (by this or an earlier run, per journal) is not paid again: its
 * journaled transaction decides the job.
 */
export async function payQuestion(setup: AskSetup, q: Question): Promise<PaidQuestion> {
  const { chain, key, journal, store, progress } = setup;
  const lifecycle = await chain.lifecycle();
  const live = await chain.inferenceLive();
  if (lifecycle.serving_root === null || live.terms === null) {
    throw new ProtocolError("wrong_model", "Cannot ask: the chain serves no model");
  }
  const terms = live.terms as Record<string, number>;
  const manifest = await chain.manifest(lifecycle.serving_root);
  const codec = await loadCodec(store, manifest.tokenizer_root);
  const prompt_ids = encodePrompt(codec, [{ role: "user", content: q.prompt }]);
  const maxTokens = q.maxTokens ?? terms.max_new_tokens!;
  const fields: InferFields = {
    model_root: lifecycle.serving_root,
    provider: q.provider,
    prompt_ids,
    max_tokens: maxTokens,
    max_price: q.maxPrice ?? maxTokens * terms.price_per_token!,
    expires_in: q.expiresIn ??
      Math.min(
        terms.max_inference_blocks!,
        Math.max(terms.min_inference_blocks!, 10 * terms.challenge_blocks!),
      ),
  };
  const submitter = new Submitter(journal, chain.http, { confirmMs: 30_000, pollMs: 200 });
  const intent = id({
    kind: "infer",
    provider: q.provider,
    prompt: q.prompt,
    request: q.request ?? randomKey(),
  });
  // An infer signed by an earlier run whose outcome is unknown holds a nonce: settle it with the same bytes.
  for (const r of submitter.records()) {
    if (r.status === "committed" || r.status === "rejected" || r.intent === intent) continue;
    await submitSettled(submitter, r.intent, never);
  }
  if (submitter.record(intent) === null) {
    progress(
      `paying at most ${fields.max_price} atoms for up to ${maxTokens} tokens (${prompt_ids.length} prompt ids)`,
    );
  }
  const sub = await submitSettled(submitter, intent, () => chain.sign(key, "infer", fields));
  if (sub.status === "rejected") {
    throw new ProtocolError((sub.code ?? "internal_error") as never, sub.message ?? "infer was refused");
  }
  const envelope = decodeCanonical(sub.raw) as unknown as { body: JsonObject; public_key: string };
  const jobId = txid(envelope as never);
  progress(`job ${jobId} accepted at height ${sub.height}`);
  return { jobId, prompt: q.prompt, prompt_ids, decode: (ids) => codec.decode(ids) };
}

function never(): Promise<Uint8Array> {
  return Promise.reject(new ProtocolError("internal_error", "Cannot re-sign a journaled infer"));
}

function randomKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(
    "",
  );
}

/** Follows a paid question's job until it ends, printing a line whenever its state changes. */
export async function followJob(setup: AskSetup, paid: PaidQuestion): Promise<AskResult> {
  const { jobId, prompt, prompt_ids, decode } = paid;
  let last = "";
  let reportedRefuted = 0;
  for (;;) {
    const j = await setup.chain.inference(jobId);
    if (j === null) {
      throw new ProtocolError("unknown_job", `Cannot follow job ${jobId}: the chain does not know it`);
    }
    const s = j.state as unknown as InferenceState;
    // Refutations are read from the job's claim count, not from the states this poll happened to see: a
    // refuted response reopens the job at the next block, and the retry may answer before the next poll.
    for (const n = refutedResponses(s, j.claims.length); reportedRefuted < n;) {
      reportedRefuted += 1;
      setup.progress(`response ${reportedRefuted} was refuted`);
    }
    const line = describe(s, j.claims.length);
    if (line !== last) setup.progress(line);
    last = line;
    if (!j.live) {
      const { height } = await setup.chain.status();
      const settled = s.status === "settled";
      const record = settled ? (j.metadata ?? {})[s.response.record_root] as { tokens?: number[] } : null;
      const tokens = record?.tokens ?? [];
      const paid = settled ? s.response.tokens * s.job.price_per_token : 0;
      const shown = tokens.length > 0 && (record as { stop?: string }).stop === "eos"
        ? tokens.slice(0, -1)
        : tokens;
      return {
        job_id: jobId,
        status: settled ? "settled" : "expired",
        prompt,
        prompt_ids,
        answer: decode(shown),
        tokens,
        paid,
        refunded: s.job.max_price - paid,
        responses: j.claims.length,
        height,
      };
    }
    await new Promise((r) => setTimeout(r, setup.pollMs ?? 250));
  }
}

/**
 * How many of a job's responses were refuted, from its state and its claim count: every claim but a pending
 * or settled last one (a job reopens only after a refutation, and expires only unanswered or refuted).
 */
export function refutedResponses(s: InferenceState, responses: number): number {
  switch (s.status) {
    case "requested":
      return 0;
    case "responded":
    case "settled":
      return Math.max(0, responses - 1);
    case "refuted":
    case "reopened":
    case "expired":
      return responses;
  }
}

function describe(s: InferenceState, responses: number): string {
  switch (s.status) {
    case "requested":
      return `waiting for the provider (expires after height ${s.job.expires})`;
    case "reopened":
      return `waiting for another response after ${responses} refuted (expires after height ${s.job.expires})`;
    case "responded": {
      const c = s.claim.challenge;
      return c === null
        ? `responded with ${s.response.tokens} tokens; challenge window until height ${s.claim.deadline}`
        : `response challenged (${c.kind}, stage ${c.stage})`;
    }
    case "refuted":
      return `response refuted: ${s.reason}`;
    case "settled":
      return `settled: ${s.response.tokens} tokens paid`;
    case "expired":
      return "expired unanswered: escrow refunded";
  }
}
