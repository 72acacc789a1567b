/**
 * Typed ledger state of data admission (PROTOCOL §6). Tables (part of the app hash, replayed everywhere):
 *
 * | table | key | value |
 * |---|---|---|
 * | `data` | `lifecycle` | `DataLifecycle`: data root, cursors, pending proposal, latest cohort, replay pool |
 * | `data` | `sources` | the pinned source specs of genesis |
 * | `data_proposal` | proposal id (txid of `propose_data`) | `Proposal`: the cohort machine state, escrow, new cursors |
 * | `data_document` | data root | the cohort document |
 * | `data_batch` | batch root | the batch JSON (every batch any proposal carried) |
 * | `data_cohort` | data root | `Cohort`: an activated cohort, its schedule and where it stands |
 * | `data_consumed` | `document/<id>`, `position/<source>#<row>`, `batch/<root>` | the data root that consumed it |
 *
 * A `Proposal`'s `escrow` is its locked bond until it activates or expires; conservation counts it.
 */
import type { JsonValue } from "../../core/canonical.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { CohortState, ScheduledBatch } from "../../workflows/cohort.ts";
import type { LedgerView, LedgerWriter } from "../state/accessors.ts";
import type { KvReader, Overlay } from "../state/overlay.ts";
import { kvOf, type TrainingView } from "../training/store.ts";
import type { CohortDocument, ConsumedIndex } from "./document.ts";
import type { DataSetup } from "./genesis.ts";
import type { SourceSpec } from "./source.ts";

/** The global data facts. */
export interface DataLifecycle {
  /** The current data root: `id(genesis data section)`, then each activated cohort's root. */
  readonly data_root: string;
  /** Each pinned source's next row. */
  readonly cursors: Readonly<Record<string, number>>;
  /** The pending proposal's id, or null. */
  readonly proposal: string | null;
  /** The data root of the latest activated cohort, or null before the first. */
  readonly cohort: string | null;
  /** The training pool of the latest activated cohort (the next cohort replays from it), or null. */
  readonly pool: readonly string[] | null;
  readonly training_blocks: number;
  readonly tokenizer_root: string;
  /**
   * Retention and fresh documents every cohort carries, when the genesis set them (absent on chains whose
   * genesis did not, which keeps their state and app hash unchanged: 32 each).
   */
  readonly evaluation_documents?: number;
}

/** The retention and fresh documents per cohort of a chain (32 each unless its genesis set the count). */
export function evaluationDocuments(l: DataLifecycle): number {
  return l.evaluation_documents ?? 32;
}

/** Where an activated cohort stands: `training` until its last scheduled step settles or its deadline closes it. */
export type CohortStatus = "training" | "trained" | "closed";

/** An activated cohort. */
export interface Cohort {
  readonly data_root: string;
  readonly proposal: string;
  readonly activated: number;
  /** Past this height an unfinished cohort closes (the first block after it with no live job). */
  readonly deadline: number;
  /** The training round at activation: step i of the schedule is round `start_round + i`. */
  readonly start_round: number;
  readonly schedule: readonly ScheduledBatch[];
  readonly status: CohortStatus;
  /** The height it was trained or closed at, or null while training. */
  readonly ended: number | null;
}

/** A data proposal as stored. */
export interface Proposal {
  readonly id: string;
  readonly escrow: number;
  /** The cursors once it activates (each window's end). */
  readonly cursors: Readonly<Record<string, number>>;
  readonly state: CohortState;
}

/** The escrow a stored proposal holds (for conservation). */
export function proposalEscrow(value: JsonValue): number {
  return (value as unknown as Proposal).escrow;
}

/** Read-only typed access to the data tables. */
export class DataView {
  constructor(protected readonly kv: KvReader) {}

  /** The data facts, or null on a chain without a data lifecycle. */
  lifecycle(): DataLifecycle | null {
    return this.kv.get("data", "lifecycle") as unknown as DataLifecycle | null;
  }

  /** The pinned sources by name. */
  sources(): Map<string, SourceSpec> {
    const list = (this.kv.get("data", "sources") ?? []) as unknown as SourceSpec[];
    return new Map(list.map((s) => [s.name, s]));
  }

  proposal(proposalId: string): Proposal | null {
    return this.kv.get("data_proposal", proposalId) as unknown as Proposal | null;
  }

  document(dataRoot: string): CohortDocument | null {
    return this.kv.get("data_document", dataRoot) as unknown as CohortDocument | null;
  }

  batch(root: string): Batch | null {
    return this.kv.get("data_batch", root) as unknown as Batch | null;
  }

  cohort(dataRoot: string): Cohort | null {
    return this.kv.get("data_cohort", dataRoot) as unknown as Cohort | null;
  }

  /** The data root that consumed `key` (`document/<id>`, `position/<source>#<row>`, `batch/<root>`), or null. */
  consumedBy(key: string): string | null {
    return this.kv.get("data_consumed", key) as string | null;
  }

  /** The consumed index of §6 over the `data_consumed` table. */
  consumed(): ConsumedIndex {
    const has = (key: string) => this.consumedBy(key) !== null;
    return {
      document: (id) => has(`document/${id}`),
      position: (source, row) => has(`position/${source}#${row}`),
      batch: (root) => has(`batch/${root}`),
    };
  }
}

/** Writable typed access to the data tables. */
export class DataWriter extends DataView {
  readonly #overlay: Overlay;

  constructor(overlay: Overlay) {
    super(overlay);
    this.#overlay = overlay;
  }

  setLifecycle(l: DataLifecycle): void {
    this.#overlay.set("data", "lifecycle", l as unknown as JsonValue);
  }

  setProposal(p: Proposal): void {
    this.#overlay.set("data_proposal", p.id, p as unknown as JsonValue);
  }

  setDocument(dataRoot: string, document: CohortDocument): void {
    this.#overlay.set("data_document", dataRoot, document);
  }

  setBatch(root: string, batch: JsonValue): void {
    this.#overlay.set("data_batch", root, batch);
  }

  setCohort(c: Cohort): void {
    this.#overlay.set("data_cohort", c.data_root, c as unknown as JsonValue);
  }

  /** Records every document id, position and batch root of `document` as consumed by `dataRoot`. */
  consume(dataRoot: string, document: CohortDocument): void {
    for (const d of document.documents) {
      this.#overlay.set("data_consumed", `document/${d.id}`, dataRoot);
      this.#overlay.set("data_consumed", `position/${d.source}#${d.row}`, dataRoot);
      for (const b of d.batches) this.#overlay.set("data_consumed", `batch/${b}`, dataRoot);
    }
  }
}

/** Data tables writable in the same overlay as `state`. */
export function dataWriter(state: LedgerWriter): DataWriter {
  return new DataWriter(kvOf(state) as Overlay);
}

/** Data tables readable through `view`. */
export function dataView(view: LedgerView | TrainingView): DataView {
  return new DataView(kvOf(view));
}

/** Writes the genesis data state: sources, first cursors and data root, nothing pending. */
export function initData(state: LedgerWriter, setup: DataSetup | null): void {
  if (setup === null) return;
  const overlay = kvOf(state) as Overlay;
  overlay.set("data", "sources", setup.sources as unknown as JsonValue);
  dataWriter(state).setLifecycle({
    data_root: setup.data_root,
    cursors: setup.cursors,
    proposal: null,
    cohort: null,
    pool: null,
    training_blocks: setup.training_blocks,
    tokenizer_root: setup.tokenizer_root,
    ...(setup.evaluation_documents === undefined ? {} : { evaluation_documents: setup.evaluation_documents }),
  });
}
