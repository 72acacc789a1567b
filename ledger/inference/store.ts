/**
 * Typed ledger state of paid inference (PROTOCOL §8). Tables (all in the ledger's key-value state, so they are
 * part of the app hash):
 *
 * | table | key | value |
 * |---|---|---|
 * | `inference` | `facts` | `InferenceFacts`: the codec's EOS id, the live job ids (sorted), how many ended jobs are kept |
 * | `inference_job` | job id (the `infer` txid) | `InferenceJob`: machine state, escrow, responses, metadata |
 * | `inference_claim` | claim id (a `respond` txid) | the job id it answers |
 * | `inference_result` | `<ended height, 12 digits>/<job id>` | the job id; the oldest entries are pruned first |
 *
 * A job's `escrow` is the atoms it holds (the requester's `max_price` and a pending response's provider bond);
 * conservation counts it. At most `MAX_LIVE_JOBS` jobs are live; at most `MAX_RETAINED_JOBS` ended jobs are
 * kept, the oldest by (height, job id) deleted with their claim index entries.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import type { InferenceState } from "../../workflows/inference.ts";
import type { LedgerView, LedgerWriter } from "../state/accessors.ts";
import type { KvReader, Overlay } from "../state/overlay.ts";

/** Most jobs live at once (§8 `infer`). */
export const MAX_LIVE_JOBS = 16;

/** Most ended jobs the ledger keeps for `/inference?id=`. */
export const MAX_RETAINED_JOBS = 256;

/** The global inference facts. */
export interface InferenceFacts {
  /** The EOS id of the genesis codec, or null when the chain pins no codec (then only the limit stops). */
  readonly eos_id: number | null;
  /** What a request costs and how long it may stay open (genesis params, for clients). */
  readonly terms: InferenceTerms;
  /** Live job ids, sorted. */
  readonly live: string[];
  /** Ended jobs kept in `inference_result`. */
  readonly retained: number;
}

/** The genesis terms of paid inference, as `/inference` shows them to clients. */
export interface InferenceTerms {
  readonly price_per_token: number;
  readonly provider_bond: number;
  readonly min_inference_blocks: number;
  readonly max_inference_blocks: number;
  readonly challenge_blocks: number;
  readonly max_new_tokens: number;
}

/** One paid request, from `infer` to its end. */
export interface InferenceJob {
  readonly id: string;
  readonly escrow: number;
  /** Every response (respond txid) in order; the last is the pending or final one. */
  readonly claims: string[];
  /** The metadata of the last response (record, partition traces, head trace keyed by id), or null. */
  readonly metadata: JsonObject | null;
  /** The height the job ended at, or null while live. */
  readonly ended: number | null;
  readonly state: InferenceState;
}

/** Read-only typed access to the inference tables. */
export class InferenceView {
  constructor(protected readonly kv: KvReader) {}

  /** The facts, or null on a chain whose genesis has no model. */
  facts(): InferenceFacts | null {
    return this.kv.get("inference", "facts") as unknown as InferenceFacts | null;
  }

  /** A job by id. */
  job(jobId: string): InferenceJob | null {
    return this.kv.get("inference_job", jobId) as unknown as InferenceJob | null;
  }

  /** The job a response answers. */
  jobOfClaim(claimId: string): InferenceJob | null {
    const jobId = this.kv.get("inference_claim", claimId) as string | null;
    return jobId === null ? null : this.job(jobId);
  }

  /** The retained results, oldest first: `[key, job id]`. */
  results(): [string, string][] {
    return this.kv.scan("inference_result") as [string, string][];
  }
}

/** Writable typed access to the inference tables. */
export class InferenceWriter extends InferenceView {
  readonly #overlay: Overlay;

  constructor(overlay: Overlay) {
    super(overlay);
    this.#overlay = overlay;
  }

  /** Replaces the facts. */
  setFacts(f: InferenceFacts): void {
    this.#overlay.set("inference", "facts", f as unknown as JsonValue);
  }

  /** Replaces a job. */
  setJob(job: InferenceJob): void {
    this.#overlay.set("inference_job", job.id, job as unknown as JsonValue);
  }

  /** Records which job a response answers. */
  setClaimJob(claimId: string, jobId: string): void {
    this.#overlay.set("inference_claim", claimId, jobId);
  }

  /** Records that `jobId` ended at `height`. */
  addResult(height: number, jobId: string): void {
    this.#overlay.set("inference_result", resultKey(height, jobId), jobId);
  }

  /** Deletes a retained job, its result entry and its claim index entries. */
  prune(key: string, job: InferenceJob): void {
    this.#overlay.set("inference_result", key, null);
    for (const c of job.claims) this.#overlay.set("inference_claim", c, null);
    this.#overlay.set("inference_job", job.id, null);
  }
}

/** The key of a result: the height as 12 digits so keys sort by (height, job id). */
export function resultKey(height: number, jobId: string): string {
  return `${String(height).padStart(12, "0")}/${jobId}`;
}

function kvOf(view: LedgerView): KvReader {
  return (view as unknown as { kv: KvReader }).kv;
}

/** Inference tables writable in the same overlay as `state`. */
export function inferenceWriter(state: LedgerWriter): InferenceWriter {
  return new InferenceWriter(kvOf(state) as Overlay);
}

/** Inference tables readable through `view`. */
export function inferenceView(view: LedgerView): InferenceView {
  return new InferenceView(kvOf(view));
}
