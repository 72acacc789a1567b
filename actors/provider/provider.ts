/**
 * The Provider actor (ARCHITECTURE "Actors", PROTOCOL §8): answers the paid inference requests addressed to
 * its key. Each pass reads the live jobs of its key from the chain and, for each:
 *
 * 1. `requested` or `reopened`: delivers the durable operation `answer` (`id({session: job, operation:
 *    {attempt}})`, attempt = responses so far) — journaled before anything is generated, its result (tokens,
 *    record, metadata) journaled before anything is submitted — then submits `respond` through the
 *    lost-acknowledgement-safe submitter under an intent of the same job and attempt, so a provider killed at
 *    any point never responds twice to one attempt and never loses a job it began;
 * 2. `responded` with a live availability challenge on its response: uploads and seals the object from its
 *    store (`publishNeeded`).
 *
 * With `forge: "token"` the first answer to each job has a forged first token (a retry after a refutation is
 * honest), for tests and the devnet.
 *
 * @example
 * ```ts
 * import { Provider } from "./provider.ts";
 * // const p = await Provider.open({ home, chain, emit: console.log, forge: null, capacities: null });
 * // await p.runOnce(); // answers every open job addressed to home.key
 * ```
 */
import { decodeCanonical, type JsonObject } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import type { JobAnswer } from "../../ledger/inference/wire.ts";
import type { InferenceState } from "../../workflows/inference.ts";
import type { ChainClient } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import { type ChallengeView, publishNeeded, submitSettled } from "../common/publish.ts";
import { defineActor, DurableActor } from "../runtime/durable.ts";
import { operationId } from "../runtime/journal.ts";
import { Submitter } from "../runtime/submit.ts";
import { type Answer, computeAnswer, ModelCache, type ProviderForge } from "./answer.ts";

/** One event the provider reports. */
export interface ProviderEvent extends JsonObject {
  event: "job" | "answer" | "respond" | "publish" | "outcome" | "error" | "status";
  job_id: string;
  detail: string;
}

/** What a provider runs with. */
export interface ProviderSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly emit: (e: ProviderEvent) => void;
  readonly forge: ProviderForge;
  /** Capacities (parameters) that split the record into partitions; null for one partition. */
  readonly capacities: readonly number[] | null;
}

/** A provider over one home. */
export class Provider {
  /** The EOS id of the chain's codec, as the last `/inference` answer said. */
  #eos: number | null = null;
  /** Jobs already reported as seen, and as ended, so each line is printed once per process. */
  readonly #seen = new Set<string>();
  readonly #ended = new Set<string>();
  /** Whether the submissions of earlier processes were settled. */
  #resumed = false;

  private constructor(
    readonly setup: ProviderSetup,
    readonly actor: DurableActor,
    readonly submitter: Submitter,
  ) {}

  /** Opens the journal (re-running any answer begun before a crash). */
  static async open(setup: ProviderSetup): Promise<Provider> {
    const models = new ModelCache(setup.home.store);
    const def = defineActor({
      name: "provider",
      machines: [],
      handlers: {
        answer: async (_ctx, input) => {
          const i = input as {
            model_root: string;
            prompt_ids: number[];
            max_tokens: number;
            eos_id: number | null;
            attempt: number;
          };
          const forge = i.attempt === 0 ? setup.forge : null;
          return await computeAnswer(models, i, forge, setup.capacities);
        },
      },
    });
    const actor = await DurableActor.open(setup.home.journal, def);
    const submitter = new Submitter(setup.home.journal, setup.chain.http, { confirmMs: 30_000, pollMs: 200 });
    return new Provider(setup, actor, submitter);
  }

  /** One pass over the live jobs addressed to this provider; returns how many are open. */
  async runOnce(): Promise<number> {
    if (!this.#resumed) await this.resume();
    const me = this.setup.home.key.accountId;
    const { eos_id, jobs } = await this.setup.chain.inferenceLive(me);
    this.#eos = eos_id;
    for (const job of jobs) {
      try {
        await this.serve(job);
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e;
        this.setup.emit({ event: "error", job_id: job.job_id, detail: `${e.code}: ${e.message}` });
      }
    }
    await this.reportEnded();
    return jobs.length;
  }

  /**
   * Settles every `respond` an earlier process signed but did not see decided (killed after sending it), with
   * its journaled bytes: the chain's record of its hash decides, nothing is signed again.
   */
  private async resume(): Promise<void> {
    for (const r of this.submitter.records()) {
      if (r.status === "committed" || r.status === "rejected") continue;
      await submitSettled(this.submitter, r.intent, () => Promise.reject(new Error("never re-signed")));
    }
    this.#resumed = true;
  }

  /** Serves one live job: answers it when it waits for an answer, publishes what a challenge asks of it. */
  private async serve(job: JobAnswer): Promise<void> {
    const s = job.state as unknown as InferenceState;
    if (!this.#seen.has(job.job_id)) {
      this.#seen.add(job.job_id);
      this.setup.emit({
        event: "job",
        job_id: job.job_id,
        detail: `${s.job.prompt_ids.length} prompt ids, up to ${s.job.max_tokens} tokens`,
      });
    }
    if (s.status === "requested" || s.status === "reopened") return await this.answer(job, s);
    if (s.status === "responded" && s.claim.owner === this.setup.home.key.accountId) {
      const c = s.claim.challenge;
      if (c !== null && c.kind === "availability") {
        await this.publish(job, s.claim.id, c as unknown as ChallengeView);
      }
    }
  }

  /** Computes (journaled) and submits (through the submitter) the answer to one attempt of a job. */
  private async answer(job: JobAnswer, s: InferenceState): Promise<void> {
    const attempt = job.claims.length;
    const intent = id({ tx: "respond", job: job.job_id, attempt });
    if (this.submitter.record(intent)?.status === "rejected") return; // refused once: the job is left to expire
    const eos_id = this.#eos;
    const bytes = await this.actor.deliver("answer", operationId(job.job_id, { attempt }), {
      model_root: s.job.model_root,
      prompt_ids: [...s.job.prompt_ids],
      max_tokens: s.job.max_tokens,
      eos_id,
      attempt,
    });
    const r = decodeCanonical(bytes) as { ok: boolean; value?: Answer; code?: string; message?: string };
    if (!r.ok) throw new ProtocolError((r.code ?? "internal_error") as never, r.message ?? "answer failed");
    const a = r.value!;
    this.setup.emit({
      event: "answer",
      job_id: job.job_id,
      detail: `${a.tokens.length} tokens in ${a.compute_ms} ms${a.forged ? " (forged)" : ""}: ${
        a.tokens.join(" ")
      }`,
    });
    const { home, chain } = this.setup;
    const sub = await submitSettled(
      this.submitter,
      intent,
      () =>
        chain.sign(home.key, "respond", {
          job_id: job.job_id,
          record_root: a.record_root,
          metadata: a.metadata,
        }),
    );
    this.setup.emit({
      event: "respond",
      job_id: job.job_id,
      detail: sub.status === "committed"
        ? `committed at ${sub.height}`
        : `refused: ${sub.code} ${sub.message}`,
    });
  }

  /** Uploads and seals the objects an availability challenge on this provider's response asks for. */
  private async publish(job: JobAnswer, claimId: string, challenge: ChallengeView): Promise<void> {
    const { home, chain } = this.setup;
    await publishNeeded({
      chain,
      submitter: this.submitter,
      key: home.key,
      claimId,
      challenge,
      fetch: async (root) => (await home.store.has(root)) ? await home.store.get(root) : null,
      onTx: (what, s) =>
        this.setup.emit({
          event: "publish",
          job_id: job.job_id,
          detail: s.status === "committed" ? what : `${what} refused: ${s.code} ${s.message}`,
        }),
    });
  }

  /** Reports the end of every job this process answered (settled, refuted and retried, or expired). */
  private async reportEnded(): Promise<void> {
    for (const jobId of this.#seen) {
      if (this.#ended.has(jobId)) continue;
      const j = await this.setup.chain.inference(jobId);
      if (j === null || j.live) continue;
      this.#ended.add(jobId);
      const s = j.state as unknown as InferenceState;
      const paid = "response" in s && s.status === "settled" ? s.response.tokens * s.job.price_per_token : 0;
      this.setup.emit({ event: "outcome", job_id: jobId, detail: `${s.status}, paid ${paid}` });
    }
  }

  /** Runs passes until `signal` aborts. */
  async run(options: { pollMs: number; signal?: AbortSignal }): Promise<void> {
    while (!options.signal?.aborted) {
      try {
        await this.runOnce();
      } catch (e) {
        if (!(e instanceof RetryableError)) throw e;
      }
      await new Promise((r) => setTimeout(r, options.pollMs));
    }
  }
}
