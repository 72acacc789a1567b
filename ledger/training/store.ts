/**
 * Typed ledger state of training settlement. Tables (all in the ledger's key-value state, so they are part of
 * the app hash and replayed by every validator):
 *
 * | table | key | value |
 * |---|---|---|
 * | `training` | `lifecycle` | `Lifecycle`: learning/serving roots, round, schedule, period counters, live job |
 * | `training_job` | job id (reserve or grow txid) | `Job`: lifecycle kind, machine state, escrow, metadata |
 * | `training_claim` | claim id | the job id the claim belongs to |
 * | `training_manifest` | model root | manifest JSON (genesis model and every claimed candidate) |
 * | `training_batch` | decimal index | batch JSON of the genesis schedule |
 * | `paid_work` | work identity | the claim id that was paid for it |
 * | `upload_chunk` | `<claim>/<object>/<index 3 digits>` | strict base64 of one uploaded chunk |
 * | `object_chunk` | `<object>/<index 3 digits>` | strict base64 of one chunk of a sealed object |
 * | `sealed_object` | object root | `{chunks, size}` |
 *
 * A `Job`'s `escrow` is the atoms it holds (Σ lock − Σ release − Σ burn of its moves); conservation counts it.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { GrowthState } from "../../workflows/growth.ts";
import type { TrainingState } from "../../workflows/training.ts";
import type { LedgerView, LedgerWriter } from "../state/accessors.ts";
import type { KvReader, Overlay } from "../state/overlay.ts";
import type { TrainingSetup } from "./genesis.ts";
import { id } from "../../core/digest.ts";

/** Period counters (§5.2). */
export type Period = {
  readonly index: number;
  readonly steps: number;
  readonly growths: number;
};

/** The global training facts. */
export interface Lifecycle {
  readonly learning_root: string;
  readonly serving_root: string;
  readonly training_round: number;
  /** `id([batch roots in genesis order])`. */
  readonly data_root: string;
  readonly batches: number;
  readonly learning_rate: string;
  readonly clip: string;
  readonly period: Period;
  /** The live job (a reservation, a training claim or a growth), or null. */
  readonly job: string | null;
}

/** One training step or growth, from reservation (or grow) to its end. */
export type Job =
  | {
    readonly kind: "training";
    readonly id: string;
    readonly claim_id: string | null;
    readonly parent: string;
    readonly escrow: number;
    readonly metadata: JsonObject | null;
    readonly state: TrainingState;
  }
  | {
    readonly kind: "growth";
    readonly id: string;
    readonly claim_id: string;
    readonly parent: string;
    readonly escrow: number;
    readonly metadata: JsonObject;
    readonly state: GrowthState;
  };

/** The escrow a stored job value holds (for conservation). */
export function jobEscrow(value: JsonValue): number {
  return (value as unknown as Job).escrow;
}

/** The chunk key suffix: the index as three digits so keys sort in chunk order. */
export function chunkIndex(index: number): string {
  return String(index).padStart(3, "0");
}

/** Read-only typed access to the training tables. */
export class TrainingView {
  constructor(protected readonly kv: KvReader) {}

  /** The training facts, or null on a chain without training. */
  lifecycle(): Lifecycle | null {
    return this.kv.get("training", "lifecycle") as unknown as Lifecycle | null;
  }

  /** A job by id. */
  job(jobId: string): Job | null {
    return this.kv.get("training_job", jobId) as unknown as Job | null;
  }

  /** The job a claim belongs to. */
  jobOfClaim(claimId: string): Job | null {
    const jobId = this.kv.get("training_claim", claimId) as string | null;
    return jobId === null ? null : this.job(jobId);
  }

  /** A manifest known to the ledger. */
  manifest(root: string): Manifest | null {
    return this.kv.get("training_manifest", root) as unknown as Manifest | null;
  }

  /** The batch at `index` of the genesis schedule. */
  batch(index: number): Batch | null {
    return this.kv.get("training_batch", String(index)) as unknown as Batch | null;
  }

  /** The batch whose root is `root`, with its index, or null. */
  batchByRoot(root: string): { index: number; batch: Batch } | null {
    for (const [k, v] of this.kv.scan("training_batch")) {
      if (id(v) === root) return { index: Number(k), batch: v as unknown as Batch };
    }
    return null;
  }

  /** The claim that was paid for a work identity, or null. */
  paidBy(identity: string): string | null {
    return this.kv.get("paid_work", identity) as string | null;
  }

  /** The base64 of an uploaded chunk of `object` for `claim`. */
  uploadChunk(claim: string, object: string, index: number): string | null {
    return this.kv.get("upload_chunk", `${claim}/${object}/${chunkIndex(index)}`) as string | null;
  }

  /** A sealed object's size and chunk count. */
  sealed(object: string): { chunks: number; size: number } | null {
    return this.kv.get("sealed_object", object) as { chunks: number; size: number } | null;
  }

  /** The base64 chunks of a sealed object in order, or null. */
  sealedChunks(object: string): string[] | null {
    const s = this.sealed(object);
    if (!s) return null;
    const out: string[] = [];
    for (let i = 0; i < s.chunks; i++) {
      out.push(this.kv.get("object_chunk", `${object}/${chunkIndex(i)}`) as string);
    }
    return out;
  }
}

/** Writable typed access to the training tables, over the same overlay as a `LedgerWriter`. */
export class TrainingWriter extends TrainingView {
  readonly #overlay: Overlay;

  constructor(overlay: Overlay) {
    super(overlay);
    this.#overlay = overlay;
  }

  /** Replaces the training facts. */
  setLifecycle(l: Lifecycle): void {
    this.#overlay.set("training", "lifecycle", l as unknown as JsonValue);
  }

  /** Replaces a job. */
  setJob(job: Job): void {
    this.#overlay.set("training_job", job.id, job as unknown as JsonValue);
  }

  /** Records which job a claim belongs to. */
  setClaimJob(claimId: string, jobId: string): void {
    this.#overlay.set("training_claim", claimId, jobId);
  }

  /** Stores a manifest under its root. */
  setManifest(root: string, manifest: Manifest): void {
    this.#overlay.set("training_manifest", root, manifest as unknown as JsonValue);
  }

  /** Stores a batch of the genesis schedule. */
  setBatch(index: number, batch: Batch): void {
    this.#overlay.set("training_batch", String(index), batch as unknown as JsonValue);
  }

  /** Marks a work identity paid by `claimId`. */
  setPaid(identity: string, claimId: string): void {
    this.#overlay.set("paid_work", identity, claimId);
  }

  /** Stores (or replaces) an uploaded chunk. */
  setUploadChunk(claim: string, object: string, index: number, data: string | null): void {
    this.#overlay.set("upload_chunk", `${claim}/${object}/${chunkIndex(index)}`, data);
  }

  /** Stores a sealed object's chunks (once; an object sealed before keeps its chunks). */
  setSealed(object: string, chunks: readonly string[], size: number): void {
    if (this.sealed(object)) return;
    chunks.forEach((c, i) => this.#overlay.set("object_chunk", `${object}/${chunkIndex(i)}`, c));
    this.#overlay.set("sealed_object", object, { chunks: chunks.length, size });
  }
}

/** The overlay behind a `LedgerWriter` or `LedgerView` (its protected `kv`), so lifecycle tables share it. */
export function kvOf(view: LedgerView | TrainingView): KvReader {
  return (view as unknown as { kv: KvReader }).kv;
}

/** Training tables writable in the same overlay as `state` (a transaction's or a block's). */
export function trainingWriter(state: LedgerWriter): TrainingWriter {
  return new TrainingWriter(kvOf(state) as Overlay);
}

/** Training tables readable through `view`. */
export function trainingView(view: LedgerView | TrainingView): TrainingView {
  return new TrainingView(kvOf(view));
}

/** Writes the genesis training state: the model as learning and serving root, the schedule and round 0. */
export function initTraining(state: LedgerWriter, setup: TrainingSetup | null): void {
  if (setup === null) return;
  const t = trainingWriter(state);
  t.setManifest(setup.root, setup.manifest);
  setup.batches.forEach((b, i) => t.setBatch(i, b));
  t.setLifecycle({
    learning_root: setup.root,
    serving_root: setup.root,
    training_round: 0,
    data_root: id(setup.batches.map((b) => id(b as unknown as JsonValue))),
    batches: setup.batches.length,
    learning_rate: setup.learning_rate,
    clip: setup.clip,
    period: { index: 0, steps: 0, growths: 0 },
    job: null,
  });
}

/** The period counters in effect at height `h` (a new period starts with zero counters). */
export function periodAt(l: Lifecycle, h: number, periodBlocks: number): Period {
  const index = Math.floor(h / periodBlocks);
  return index === l.period.index ? l.period : { index, steps: 0, growths: 0 };
}
