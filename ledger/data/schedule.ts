/**
 * What a training reservation binds and when growth is allowed (PROTOCOL §5, §6). On a chain with a data
 * lifecycle, `reserve` binds `{data_root, sequence_index, batch}` = the latest cohort's root, the schedule
 * position (`training_round − start_round`) and that step's batch, only while the cohort is `training`, before
 * its deadline and before its last scheduled step; growth is allowed only before the first step of such a
 * cohort. On a chain whose genesis lists `training.batches` instead, the stand-in rules stay: the batch is
 * `training_batches[round mod n]` and growth is allowed at the start of a pass (round mod n = 0).
 *
 * @example
 * ```ts
 * import { reservedBatch } from "./schedule.ts";
 * const bound = reservedBatch(state, lifecycle, env.height); // {data_root, sequence_index, batch} or a rejection
 * ```
 */
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { Assignment } from "../../workflows/training.ts";
import type { LedgerView } from "../state/accessors.ts";
import { type Lifecycle, type TrainingView, trainingView } from "../training/store.ts";
import { type Cohort, dataView } from "./store.ts";

/** The batch binding of a reservation. */
export interface BoundBatch {
  readonly data_root: string;
  readonly sequence_index: number;
  readonly batch: string;
}

/** The schedule position of `cohort` at training round `round`. */
export function cohortPosition(cohort: Cohort, round: number): number {
  return round - cohort.start_round;
}

/** The latest cohort, open for steps at `height` (training, before its deadline and its last step), or a rejection. */
function openCohort(
  view: LedgerView | TrainingView,
  l: Lifecycle,
  height: number,
  what: string,
): Cohort | Rejection {
  const d = dataView(view).lifecycle()!;
  const cohort = d.cohort === null ? null : dataView(view).cohort(d.cohort);
  if (cohort === null) return reject("no_batch", `Cannot ${what}: no cohort is activated yet`);
  const position = cohortPosition(cohort, l.training_round);
  if (cohort.status !== "training" || position >= cohort.schedule.length) {
    return reject(
      "no_batch",
      `Cannot ${what}: cohort ${cohort.data_root} is ${cohort.status} at step ${position} of ${cohort.schedule.length}`,
    );
  }
  if (height > cohort.deadline) {
    return reject(
      "no_batch",
      `Cannot ${what}: cohort ${cohort.data_root} passed its deadline ${cohort.deadline}`,
    );
  }
  return cohort;
}

/** What `reserve` binds at `height`, or `no_batch`. */
export function reservedBatch(
  view: LedgerView | TrainingView,
  l: Lifecycle,
  height: number,
): BoundBatch | Rejection {
  if (dataView(view).lifecycle() === null) {
    const index = l.training_round % l.batches;
    const batch = trainingView(view).batch(index)!;
    return { data_root: l.data_root, sequence_index: index, batch: id(batch as unknown as JsonValue) };
  }
  const cohort = openCohort(view, l, height, "reserve");
  if ("ok" in cohort) return cohort;
  const position = cohortPosition(cohort, l.training_round);
  return { data_root: cohort.data_root, sequence_index: position, batch: cohort.schedule[position]!.batch };
}

/** The batch an assignment names (its JSON from the cohort's or the genesis batches). */
export function assignedBatch(view: LedgerView | TrainingView, a: Assignment): Batch {
  const batch = dataView(view).lifecycle() === null
    ? trainingView(view).batch(a.sequence_index)
    : dataView(view).batch(a.batch);
  if (batch === null) throw new Error(`Cannot find batch ${a.batch} of assignment ${a.id}`);
  return batch;
}

/** Null when a growth is allowed at `height`, else the rejection. */
export function growthRule(view: LedgerView | TrainingView, l: Lifecycle, height: number): Rejection | null {
  if (dataView(view).lifecycle() === null) {
    if (l.training_round % l.batches === 0) return null;
    return reject(
      "invalid_transition",
      `Cannot grow: training round is ${l.training_round}, growth is allowed only at the start of a pass over ${l.batches} batches`,
    );
  }
  const cohort = openCohort(view, l, height, "grow");
  if ("ok" in cohort) return reject("invalid_transition", cohort.message);
  const position = cohortPosition(cohort, l.training_round);
  if (position === 0) return null;
  return reject(
    "invalid_transition",
    `Cannot grow: cohort ${cohort.data_root} is at step ${position}, growth is allowed only before its first step`,
  );
}
