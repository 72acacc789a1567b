/**
 * The devnet's closing summary (issue 14 item 4), gathered from the chain after the scenario, and only from
 * the chain and the scenario's journals (so a resumed devnet shows what one that never stopped shows):
 *
 * | key | what |
 * |---|---|
 * | `validators_agree` | every validator's block at `height` has `app_hash` |
 * | `app_hash`, `height` | the proposer's final block |
 * | `epochs` | per epoch: `cohort` {`data_root`, `yes_power`, `total_power`, `activated_height`, `replay_steps`}, `steps` (each claim with `loss`, `outcome`, its batch and why a rejected one was rejected), `evaluation` {`decision`, per group `S`, `Q`, `G`, `passed`, ...}, `learning_root_after` (the root its training ended at: the evaluation's candidate), `serving_root_after` |
 * | `inference` | each paid answer: `prompt`, `answer`, `tokens`, `paid_atoms`, `refunded_atoms`, `outcome` |
 * | `rejected` | every rejected claim, score and response with its reason |
 * | `issued_atoms`, `burned_atoms` | the supply totals of the final state |
 * | `balances` | every named account's balance |
 * | `conserved` | the conservation invariant recomputed from validator-0's final state by a full scan |
 *
 * `--json` prints exactly this object; `formatSummary` prints the same as a readable report, with the
 * engine and every validator's app hash (`SummaryDetail`) beside it.
 *
 * @example
 * ```ts
 * import { collectSummary, formatSummary } from "./summary.ts";
 * // const { summary, detail } = await collectSummary(layout, validatorUrls, scenario);
 * // console.log(formatSummary(summary, detail));
 * ```
 */
import { DatabaseSync } from "node:sqlite";
import { type JsonObject, type JsonValue, parseJson } from "../core/canonical.ts";
import { assertConserved, scanSums } from "../ledger/state/conservation.ts";
import type { KvReader } from "../ledger/state/overlay.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import { ChainView } from "./chain_view.ts";
import {
  collectEvaluations,
  evaluationLines,
  type EvaluationOutcome,
  type GateGroup,
} from "./evaluation_summary.ts";
import { collectInference, type InferenceOutcome } from "./inference_summary.ts";
import type { Scenario } from "./scenario_journal.ts";

/** An epoch's cohort as the chain activated it. */
export interface EpochCohort extends JsonObject {
  data_root: string;
  /** Voting power of the owners who voted yes, and of the whole electorate at the proposal. */
  yes_power: number;
  total_power: number;
  activated_height: number;
  /** Scheduled steps that replay the previous cohort's batches. */
  replay_steps: number;
}

/** One training claim of an epoch. */
export interface EpochStep extends JsonObject {
  claim_id: string;
  height: number;
  loss: number | null;
  /** `settled`, `rejected`, `expired`, ... */
  outcome: string;
  reason: string | null;
  batch: string | null;
}

/** An epoch's evaluation: the decision and each gate group. */
export interface EpochEvaluation extends JsonObject {
  evaluation_id: string;
  decision: "promote" | "keep";
  reason: string;
  retention: GateGroup | null;
  fresh: GateGroup | null;
  settled_scores: number;
}

/** One epoch. */
export interface EpochSummary extends JsonObject {
  epoch: number;
  cohort: EpochCohort;
  steps: EpochStep[];
  evaluation: EpochEvaluation | null;
  /** The learning root the epoch's training ended at (its evaluation's candidate; null without one). */
  learning_root_after: string | null;
  serving_root_after: string | null;
}

/** Something the chain rejected, and why. */
export interface Rejected extends JsonObject {
  kind: "claim" | "score" | "response";
  id: string;
  epoch: number | null;
  reason: string | null;
}

/** The summary of a devnet run: exactly the keys of issue 14 item 4. */
export interface DevnetSummary extends JsonObject {
  validators_agree: boolean;
  app_hash: string;
  height: number;
  epochs: EpochSummary[];
  inference: InferenceOutcome[];
  rejected: Rejected[];
  issued_atoms: number;
  burned_atoms: number;
  balances: { name: string; account: string; balance: number }[];
  conserved: boolean;
}

/** What the readable report shows beside the summary. */
export interface SummaryDetail {
  readonly engine: "embedded" | "cometbft";
  readonly app_hashes: { validator: string; app_hash: string | null }[];
  readonly evaluations: EvaluationOutcome[];
}

/** A read-only key-value view of a validator's state file (the tables the ledger writes). */
function stateReader(db: DatabaseSync): KvReader {
  const get = db.prepare("SELECT value FROM state WHERE tbl = ? AND key = ?");
  const scan = db.prepare("SELECT key, value FROM state WHERE tbl = ? ORDER BY key");
  return {
    get: (table, key) => {
      const row = get.get(table, key) as { value: string } | undefined;
      return row ? parseJson(row.value) : null;
    },
    scan: (table) =>
      (scan.all(table) as { key: string; value: string }[]).map((r): [string, JsonValue] => [
        r.key,
        parseJson(r.value),
      ]),
  };
}

/**
 * The supply totals of a validator's state and whether the conservation invariant holds over a full scan of
 * it (genesis supply + issued = balances + bonds + escrows + burned).
 */
export function finalTotals(home: string): { issued: number; burned: number; conserved: boolean } {
  const db = new DatabaseSync(`${home}/state.sqlite`, { readOnly: true });
  try {
    const sums = scanSums(stateReader(db));
    let conserved = true;
    try {
      assertConserved(sums, 0);
    } catch {
      conserved = false;
    }
    return { issued: sums.issued, burned: sums.burned, conserved };
  } finally {
    db.close();
  }
}

/** An activated cohort from `/data?root=` and its proposal's electorate and votes. */
export async function epochCohort(
  view: ChainView,
  root: string,
): Promise<{ cohort: EpochCohort; ended: number | null }> {
  const c = await view.get(`/data?root=${root}`) as {
    proposal: string;
    activated: number;
    ended: number | null;
    schedule: { kind: string }[];
  };
  const p = await view.get(`/data/proposal?id=${c.proposal}`) as {
    state: { electorate: [string, number][]; votes: [string, boolean][] };
  };
  const yes = new Set(p.state.votes.filter(([, v]) => v).map(([o]) => o));
  const power = (owners: (o: string) => boolean) =>
    p.state.electorate.filter(([o]) => owners(o)).reduce((n, [, w]) => n + w, 0);
  return {
    cohort: {
      data_root: root,
      yes_power: power((o) => yes.has(o)),
      total_power: power(() => true),
      activated_height: c.activated,
      replay_steps: c.schedule.filter((s) => s.kind === "replay").length,
    },
    ended: c.ended,
  };
}

/**
 * Gathers the summary at the proposer's current height: waits (up to 20 s) for every replica to commit that
 * height and compares their app hashes; each epoch's claims are those committed from its cohort's activation
 * until the next cohort's. `proposer`, a view of `urls[0]` that already scanned blocks while the scenario
 * ran (`followBlocks`), saves reading them all again here.
 */
export async function collectSummary(
  layout: DevnetLayout,
  urls: readonly string[],
  scenario: Scenario,
  engine: "embedded" | "cometbft" = "embedded",
  proposerView?: ChainView,
): Promise<{ summary: DevnetSummary; detail: SummaryDetail }> {
  const views = urls.map((u, i) =>
    i === 0 && proposerView?.url === u.replace(/\/$/, "") ? proposerView : new ChainView(u)
  );
  const proposer = views[0]!;
  const { height } = await proposer.status();
  const app_hashes = [];
  for (const [i, v] of views.entries()) {
    app_hashes.push({
      validator: `validator-${i}`,
      app_hash: await v.appHash(height, 20_000).catch(() => null),
    });
  }
  const app_hash = app_hashes[0]!.app_hash ?? "";
  const claims = await proposer.claims(height);
  const evaluations = await collectEvaluations(proposer);
  const epochs: EpochSummary[] = [];
  const rejected: Rejected[] = [];
  const cohorts = [];
  for (const root of scenario.cohorts) cohorts.push(await epochCohort(proposer, root));
  for (const [i, { cohort }] of cohorts.entries()) {
    const from = cohort.activated_height, to = cohorts[i + 1]?.cohort.activated_height ?? Infinity;
    const steps = claims.filter((c) => c.height >= from && c.height < to).map((c): EpochStep => ({
      claim_id: c.claim_id,
      height: c.height,
      loss: c.loss,
      outcome: c.status,
      reason: c.reason,
      batch: c.batch,
    }));
    const e = evaluations.find((x) => x.cohort === cohort.data_root) ?? null;
    epochs.push({
      epoch: i + 1,
      cohort,
      steps,
      evaluation: e && {
        evaluation_id: e.evaluation_id,
        decision: e.decision,
        reason: e.reason,
        retention: e.groups.retention,
        fresh: e.groups.fresh,
        settled_scores: e.settled_scores,
      },
      learning_root_after: e?.candidate ?? null,
      serving_root_after: e?.serving_root_after ?? null,
    });
    for (const s of steps) {
      if (s.outcome === "rejected") {
        rejected.push({ kind: "claim", id: s.claim_id, epoch: i + 1, reason: s.reason });
      }
    }
    for (const r of e?.rejected ?? []) {
      rejected.push({ kind: "score", id: r.claim_id, epoch: i + 1, reason: r.reason });
    }
  }
  const inference = await collectInference(layout, urls[0]!, proposer, height);
  for (const job of inference) {
    for (const r of job.refuted) {
      rejected.push({ kind: "response", id: r.claim_id, epoch: null, reason: r.reason });
    }
  }
  const balances = [];
  for (const [name, account] of Object.entries(layout.accounts)) {
    balances.push({ name, account, balance: await proposer.balance(account) });
  }
  const totals = finalTotals(layout.validators[0]!);
  const summary: DevnetSummary = {
    validators_agree: app_hashes.every((h) => h.app_hash === app_hash && app_hash !== ""),
    app_hash,
    height,
    epochs,
    inference,
    rejected,
    issued_atoms: totals.issued,
    burned_atoms: totals.burned,
    balances,
    conserved: totals.conserved,
  };
  return { summary, detail: { engine, app_hashes, evaluations } };
}

const neuro = (atoms: number) => `${(atoms / 1_000_000).toFixed(6)} NEURO`;

/** The summary as a readable report: the same facts as the JSON, with the engine and every app hash. */
export function formatSummary(s: DevnetSummary, detail: SummaryDetail): string {
  const lines = ["", "=== devnet summary ==="];
  for (const e of s.epochs) {
    const c = e.cohort;
    lines.push(
      `epoch ${e.epoch}: cohort ${c.data_root} activated at height ${c.activated_height} by ${c.yes_power} of ` +
        `${c.total_power} voting power; ${c.replay_steps} replay step${c.replay_steps === 1 ? "" : "s"}`,
    );
    for (const [i, st] of e.steps.entries()) {
      const loss = st.loss === null ? "?" : st.loss.toFixed(4);
      const why = st.reason ? ` (${st.reason})` : "";
      lines.push(`  step ${i + 1}. height ${st.height}  loss ${loss}  ${st.outcome}${why}  ${st.claim_id}`);
    }
    if (e.learning_root_after !== null) lines.push(`  trained to learning root ${e.learning_root_after}`);
    const ev = detail.evaluations.find((x) => x.evaluation_id === e.evaluation?.evaluation_id);
    if (ev) lines.push(...evaluationLines([ev]).map((l) => `  ${l}`));
    else lines.push("  no evaluation");
  }
  if (s.inference.length > 0) lines.push("paid answers:");
  for (const [i, a] of s.inference.entries()) {
    const again = a.refuted.length > 0
      ? ` after ${a.refuted.length} refuted response${a.refuted.length > 1 ? "s" : ""}`
      : "";
    lines.push(
      `  ${i + 1}. ${a.provider}: ${JSON.stringify(a.prompt)} → ${
        JSON.stringify(a.answer)
      }  ${a.tokens.length} ` +
        `tokens, ${a.outcome}${again}, paid ${a.paid_atoms}, refunded ${a.refunded_atoms} atoms  ${a.job_id}`,
    );
  }
  lines.push(`rejected: ${s.rejected.length}`);
  for (const r of s.rejected) {
    lines.push(
      `  ${r.kind} ${r.id}${r.epoch === null ? "" : ` (epoch ${r.epoch})`}: ${r.reason ?? "no reason given"}`,
    );
  }
  lines.push(
    `atoms issued ${s.issued_atoms} (${neuro(s.issued_atoms)}), burned ${s.burned_atoms} (${
      neuro(s.burned_atoms)
    }); ` +
      (s.conserved ? "conservation holds over the final state" : "CONSERVATION BROKEN in the final state"),
  );
  lines.push("balances:");
  for (const b of s.balances) {
    lines.push(`  ${b.name.padEnd(15)} ${String(b.balance).padStart(16)} atoms  ${b.account}`);
  }
  lines.push(
    s.validators_agree
      ? `all ${detail.app_hashes.length} ${detail.engine} validators agree on the app hash at height ${s.height}: ${s.app_hash}`
      : `validators DISAGREE at height ${s.height}: ${
        detail.app_hashes.map((h) => `${h.validator} ${h.app_hash}`).join(", ")
      }`,
  );
  return lines.join("\n");
}
