/**
 * A data-lifecycle ledger with one trained cohort (one scheduled step, settled unchallenged) and helpers to
 * open an evaluation, build score claims (real forward records under the side's model, with the committed
 * losses the test chooses), run all four groups to completion in parallel, and read `/evaluation`.
 */
import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { configFromJson } from "../../../kernels/config.ts";
import { type Manifest, readComponent } from "../../../kernels/manifest.ts";
import type { Model } from "../../../kernels/model.ts";
import { claimLosses, type ScoreProof, scoreRecord } from "../../../kernels/score_record.ts";
import { id } from "../../../core/digest.ts";
import type { CohortEntry } from "../../../ledger/data/document.ts";
import type { Envelope } from "../../../ledger/envelope.ts";
import { scoreMetadata } from "../../../ledger/evaluation/wire.ts";
import type { AccountKey } from "../../../ledger/keys.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { reserveAndClaim, TWO_STAGES } from "../training/_flow.ts";
import { type Net, sponsor } from "../training/_harness.ts";
import type { TestCohort } from "../data/_cohort.ts";
import { activate, dataNet, nextCohort } from "../data/_net.ts";

export type Side = "baseline" | "candidate";
export type Role = "retention" | "fresh";

/** A chosen loss for window `w` (0-based within its group) of `side`/`role`, or null for the honest loss. */
export type LossFn = (side: Side, role: Role, window: number) => number | null;

/** A ledger whose latest cohort is trained: one step settled, so the learning root is a new candidate. */
export function trainedNet(
  opts: {
    params?: JsonObject;
    edit?: (entries: CohortEntry[], batches: Map<string, Batch>) => void;
    path?: string;
  } = {},
): { net: Net; cohort: TestCohort } {
  const net = dataNet({
    params: { steps_per_cohort: 1, ...opts.params },
    ...(opts.path === undefined ? {} : { path: opts.path }),
  });
  const cohort = nextCohort(net, "eval", {}, opts.edit);
  activate(net, cohort);
  const { height } = reserveAndClaim(net);
  net.until(height + DEVNET_PARAMS.challenge_blocks + 3);
  assert.equal(((net.lifecycle().data as JsonObject).cohort as JsonObject).status, "trained");
  return { net, cohort };
}

/** The model stored under `root` (manifest from the ledger, components from the test's objects). */
export function modelAt(net: Net, root: string): { model: Model; manifest: Manifest } {
  const manifest = net.app.query(`/manifest?root=${root}`) as unknown as Manifest;
  const config = configFromJson(manifest.config as unknown as JsonValue);
  const components = Object.fromEntries(
    Object.entries(manifest.components).map((
      [name, r],
    ) => [name, readComponent(config, name, net.objects.get(r)!)]),
  );
  return { model: { config, components }, manifest };
}

/** `/evaluation` or `/evaluation?id=`. */
export function evaluationAnswer(net: Net, evaluationId?: string): JsonObject {
  return net.app.query(evaluationId ? `/evaluation?id=${evaluationId}` : "/evaluation") as JsonObject;
}

/** Opens the evaluation; its id. */
export function open(net: Net, key: AccountKey = sponsor): string {
  const tx = net.tx(key, "open_evaluation", {});
  net.ok(tx);
  return net.id(tx);
}

/** The window batches of `role` in layout order. */
export function windowsOf(net: Net, evaluationId: string, role: Role): Batch[] {
  const e = evaluationAnswer(net, evaluationId);
  return ((e.windows as JsonObject)[role] as string[]).map((r) =>
    net.app.query(`/batch?root=${r}`) as unknown as Batch
  );
}

/** A score record for `side`/`role` at `offset` (the next ≤ 4 windows), with losses from `loss` where given. */
export function scoreProof(
  net: Net,
  evaluationId: string,
  side: Side,
  role: Role,
  offset: number,
  loss: LossFn = () => null,
  opts: { windows?: Batch[]; modelRoot?: string } = {},
): ScoreProof {
  const e = evaluationAnswer(net, evaluationId);
  const root = opts.modelRoot ?? e[side] as string;
  const all = windowsOf(net, evaluationId, role);
  const windows = opts.windows ?? all.slice(offset, offset + 4);
  const key = id([root, ...windows.map((w) => id(w as unknown as JsonValue))]);
  let honest = HONEST.get(key);
  if (!honest) {
    honest = scoreRecord(modelAt(net, root).model, root, windows, TWO_STAGES);
    if (HONEST.size > 256) HONEST.clear();
    HONEST.set(key, honest);
  }
  const chosen = windows.map((_, i) => loss(side, role, offset + i));
  if (chosen.every((x) => x === null)) return honest;
  return claimLosses(honest, chosen.map((x, i) => x ?? honest.computed.losses[i]!));
}

/** Honest records by (model, windows): every test ledger trains the same cohort to the same candidate. */
const HONEST = new Map<string, ScoreProof>();

/** The `score` transaction of `proof`. */
export function scoreTx(
  net: Net,
  evaluationId: string,
  side: Side,
  role: Role,
  offset: number,
  proof: ScoreProof,
  key: AccountKey = sponsor,
  nonceOffset = 0,
): Envelope {
  for (const [r, b] of proof.objects) net.objects.set(r, b);
  return net.tx(key, "score", {
    evaluation_id: evaluationId,
    side,
    role,
    offset,
    record_root: proof.recordRoot,
    metadata: scoreMetadata(proof),
  }, nonceOffset);
}

/** Scores every window of all four groups (one score per group at a time, all groups in parallel). */
export function scoreAll(net: Net, evaluationId: string, loss: LossFn = () => null): void {
  const groups: [Side, Role][] = [["baseline", "retention"], ["baseline", "fresh"], [
    "candidate",
    "retention",
  ], [
    "candidate",
    "fresh",
  ]];
  for (let round = 0; round < 20; round++) {
    const g = evaluationAnswer(net, evaluationId).groups as Record<string, JsonObject>;
    const open = groups.filter(([s, r]) => {
      const x = g[`${s}_${r}`]!;
      return x.pending === null && (x.settled as number) < (x.total as number);
    });
    const busy = groups.some(([s, r]) => g[`${s}_${r}`]!.pending !== null);
    if (open.length === 0 && !busy) return;
    if (open.length > 0) {
      net.ok(
        ...open.map(([s, r], i) => {
          const offset = g[`${s}_${r}`]!.settled as number;
          return scoreTx(
            net,
            evaluationId,
            s,
            r,
            offset,
            scoreProof(net, evaluationId, s, r, offset, loss),
            sponsor,
            i,
          );
        }),
      );
    }
    net.until(net.height + DEVNET_PARAMS.challenge_blocks + 1);
  }
  throw new Error(`Cannot score evaluation ${evaluationId}: groups did not settle`);
}

/** `finish_evaluation`. */
export function finishTx(net: Net, evaluationId: string, key: AccountKey = sponsor): Envelope {
  return net.tx(key, "finish_evaluation", { evaluation_id: evaluationId });
}
