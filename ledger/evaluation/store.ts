/**
 * Typed ledger state of evaluation and the serving decision (PROTOCOL §7). Tables (part of the app hash):
 *
 * | table | key | value |
 * |---|---|---|
 * | `evaluation` | `facts` | `EvaluationFacts`: the live evaluation, the last cohort evaluated, the serving model, how many ended evaluations are kept |
 * | `evaluation_run` | evaluation id (the `open_evaluation` txid) | `EvaluationRun`: the machine state, the cohort, every window's batch root, the scores |
 * | `evaluation_score` | claim id (a `score` txid) | `ScoreEntry`: the score claim's machine state, escrow and metadata |
 * | `evaluation_history` | `<ended height, 12 digits>/<evaluation id>` | the evaluation id; the oldest are pruned first |
 *
 * A score's `escrow` is its locked claim bond (and a live challenger's bond); conservation counts it. The facts
 * are absent until the first evaluation opens (then `serving` names the genesis model). At most
 * `MAX_RETAINED_EVALUATIONS` ended evaluations are kept; pruning deletes the run and its ended scores.
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import type { EvaluationState } from "../../workflows/evaluation.ts";
import type { ScoreState } from "../../workflows/score.ts";
import type { LedgerView, LedgerWriter } from "../state/accessors.ts";
import type { KvReader, Overlay } from "../state/overlay.ts";
import { kvOf, type TrainingView } from "../training/store.ts";

/** Most ended evaluations the ledger keeps (with their scores, measurements and decision). */
export const MAX_RETAINED_EVALUATIONS = 16;

/** The model the chain serves and what put it there. */
export interface Serving {
  readonly model_root: string;
  /** The evaluation that promoted it, or null for the genesis model. */
  readonly evaluation: string | null;
  /** The height it became the serving root (0 for the genesis model). */
  readonly since: number;
}

/** The global evaluation facts. */
export interface EvaluationFacts {
  /** The live (undecided) evaluation, or null. */
  readonly live: string | null;
  /** Live score claims (of any evaluation, also one decided since), sorted. */
  readonly pending: readonly string[];
  /** The data root of the last cohort an evaluation was opened for, or null. */
  readonly evaluated: string | null;
  readonly serving: Serving;
  /** Ended evaluations kept in `evaluation_history`. */
  readonly retained: number;
}

/** One evaluation from `open_evaluation` to its decision. */
export interface EvaluationRun {
  readonly id: string;
  /** The cohort evaluated (its data root). */
  readonly cohort: string;
  readonly opened: number;
  /** The height it was decided at, or null while live. */
  readonly ended: number | null;
  /** The batch root of every window, per role, in layout order. */
  readonly windows: { readonly retention: readonly string[]; readonly fresh: readonly string[] };
  /** Every score claim submitted for it, in order. */
  readonly scores: readonly string[];
  readonly state: EvaluationState;
}

/** One score claim. */
export interface ScoreEntry {
  readonly id: string;
  readonly evaluation_id: string;
  readonly escrow: number;
  /** The record, its partition traces and its head, each keyed by id. */
  readonly metadata: JsonObject;
  readonly ended: number | null;
  readonly state: ScoreState;
}

/** The escrow a stored score value holds (for conservation). */
export function scoreEscrow(value: JsonValue): number {
  return (value as unknown as ScoreEntry).escrow;
}

/** Read-only typed access to the evaluation tables. */
export class EvaluationView {
  constructor(protected readonly kv: KvReader) {}

  /** The facts, or null before the first evaluation. */
  facts(): EvaluationFacts | null {
    return this.kv.get("evaluation", "facts") as unknown as EvaluationFacts | null;
  }

  /** An evaluation by id. */
  run(evaluationId: string): EvaluationRun | null {
    return this.kv.get("evaluation_run", evaluationId) as unknown as EvaluationRun | null;
  }

  /** A score claim by id. */
  score(claimId: string): ScoreEntry | null {
    return this.kv.get("evaluation_score", claimId) as unknown as ScoreEntry | null;
  }

  /** The retained ended evaluations, oldest first: `[key, evaluation id]`. */
  history(): [string, string][] {
    return this.kv.scan("evaluation_history") as [string, string][];
  }
}

/** Writable typed access to the evaluation tables. */
export class EvaluationWriter extends EvaluationView {
  readonly #overlay: Overlay;

  constructor(overlay: Overlay) {
    super(overlay);
    this.#overlay = overlay;
  }

  /** Replaces the facts. */
  setFacts(f: EvaluationFacts): void {
    this.#overlay.set("evaluation", "facts", f as unknown as JsonValue);
  }

  /** Replaces an evaluation. */
  setRun(run: EvaluationRun): void {
    this.#overlay.set("evaluation_run", run.id, run as unknown as JsonValue);
  }

  /** Replaces a score claim. */
  setScore(score: ScoreEntry): void {
    this.#overlay.set("evaluation_score", score.id, score as unknown as JsonValue);
  }

  /** Records that evaluation `evaluationId` ended at `height`. */
  addHistory(height: number, evaluationId: string): void {
    this.#overlay.set("evaluation_history", historyKey(height, evaluationId), evaluationId);
  }

  /** Deletes a retained evaluation, its history entry and its ended scores. */
  prune(key: string, run: EvaluationRun): void {
    this.#overlay.set("evaluation_history", key, null);
    for (const s of run.scores) {
      if (this.score(s)?.ended !== null) this.#overlay.set("evaluation_score", s, null);
    }
    this.#overlay.set("evaluation_run", run.id, null);
  }

  /** Deletes an ended score whose evaluation was pruned while it was live. */
  deleteScore(claimId: string): void {
    this.#overlay.set("evaluation_score", claimId, null);
  }
}

/** The key of a history entry: the height as 12 digits so keys sort by (height, evaluation id). */
export function historyKey(height: number, evaluationId: string): string {
  return `${String(height).padStart(12, "0")}/${evaluationId}`;
}

/** Evaluation tables writable in the same overlay as `state`. */
export function evaluationWriter(state: LedgerWriter): EvaluationWriter {
  return new EvaluationWriter(kvOf(state) as Overlay);
}

/** Evaluation tables readable through `view`. */
export function evaluationView(view: LedgerView | TrainingView): EvaluationView {
  return new EvaluationView(kvOf(view));
}
