/**
 * The SmolLM2 devnet's report: the devnet summary read from the chain (claims, balances, issued atoms, app
 * hashes) plus the measures of the reference's published lifecycle, ours beside theirs — step time, each
 * stage's replay by the referee, the forged step's dispute (bytes, upload/seal transactions, publish and
 * resolve time, counted from the chain's blocks), the growth (parameters added, bytes the referee needed),
 * atoms issued, agreement, the final answer and the answer bought through paid inference — and what the
 * reference's run did not have: the cohorts the validators voted in (data root, yes and total voting power)
 * and the evaluation of the final model against the genesis one (per gate group S, Q, G and whether it passed;
 * the decision; the serving root after), with each phase's wall time and every process's peak RSS.
 *
 * @example
 * ```ts
 * import { formatSmollm2Report } from "./smollm2_report.ts";
 * // console.log(formatSmollm2Report(await collectSmollm2Report(layout, urls, scenario)));
 * ```
 */
import { isObject, type JsonObject } from "../core/canonical.ts";
import { decodeBase64Strict } from "../ledger/training/wire.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import { ChainView } from "./chain_view.ts";
import type { Smollm2Scenario } from "./smollm2_journal.ts";
import { type ClaimOutcome } from "./chain_view.ts";
import { finalTotals } from "./summary.ts";
import { collectInference, type InferenceOutcome } from "./inference_summary.ts";
import { type EpochCohort, epochCohort } from "./summary.ts";
import { evaluationLines, type EvaluationOutcome, evaluationOutcome } from "./evaluation_summary.ts";

/** What the SmolLM2 report reads from the chain at the proposer's height. */
export interface Smollm2Summary extends JsonObject {
  height: number;
  app_hash: string;
  /** True when every validator's block at `height` has `app_hash`. */
  validators_agree: boolean;
  app_hashes: { validator: string; app_hash: string | null }[];
  training_round: number;
  learning_root: string | null;
  serving_root: string | null;
  claims: (ClaimOutcome & JsonObject)[];
  issued: number;
  burned: number;
  balances: { name: string; account: string; balance: number }[];
}

/** The chain's facts at the proposer's current height, every validator's app hash compared there. */
async function collectSummary(layout: DevnetLayout, urls: readonly string[]): Promise<Smollm2Summary> {
  const views = urls.map((u) => new ChainView(u));
  const proposer = views[0]!;
  const lc = await proposer.lifecycle();
  const height = lc.height;
  const app_hashes = [];
  for (const [i, v] of views.entries()) {
    app_hashes.push({
      validator: `validator-${i}`,
      app_hash: await v.appHash(height, 20_000).catch(() => null),
    });
  }
  const app_hash = app_hashes[0]!.app_hash ?? "";
  const balances = [];
  for (const [name, account] of Object.entries(layout.accounts)) {
    balances.push({ name, account, balance: await proposer.balance(account) });
  }
  const totals = finalTotals(layout.validators[0]!);
  return {
    height,
    app_hash,
    validators_agree: app_hashes.every((h) => h.app_hash === app_hash && app_hash !== ""),
    app_hashes,
    training_round: lc.training_round,
    learning_root: lc.learning_root,
    serving_root: lc.serving_root,
    claims: (await proposer.claims(height)) as (ClaimOutcome & JsonObject)[],
    issued: totals.issued,
    burned: totals.burned,
    balances,
  };
}

/** The reference's published figures for the same lifecycle. */
export const SMOLLM2_REFERENCE = {
  parameters: 134_515_008,
  step_s: 18.05,
  replay_s: [7.32, 6.41, 5.76],
  dispute_bytes: 171_114_496,
  dispute_txs: 184,
  publish_s: 363.57,
  resolve_s: 19.47,
  grown_parameters: 148_675_392,
  growth_bytes: 14_161_224,
  issued: 2_000_000,
  answer: "The capital of France is Paris.",
} as const;

/** The forged step's dispute as the chain recorded it. */
export interface DisputeFacts extends JsonObject {
  claim_id: string;
  status: string;
  reason: string | null;
  /** Bytes uploaded (decoded) and upload + seal transactions accepted, for the claim. */
  bytes: number;
  txs: number;
  uploads: number;
  seals: number;
  /** Block time from the challenge's block to the last seal's block, ms. */
  publish_ms: number | null;
  /**
   * Block time from the last seal's block to the block after the resolve's, ms: the resolve's replay runs
   * while its block is applied, so this includes it (and any stall of block production).
   */
  resolve_ms: number | null;
  /** The longest time between two consecutive blocks from the last seal to the block after the resolve, ms. */
  longest_block_ms: number | null;
}

/** The report. */
export interface Smollm2Report extends JsonObject {
  summary: Smollm2Summary;
  dispute: DisputeFacts | null;
  growth: JsonObject | null;
  answer: JsonObject | null;
  /** The cohorts voted in, in order: the honest step's, then the forged, grown and trained steps'. */
  cohorts: EpochCohort[];
  /** The final model's evaluation against the genesis serving model, as the chain decided it. */
  evaluation: EvaluationOutcome | null;
  /** The decision's gate as `/evaluation?id=` answers it: per role each document's loss and q (PROTOCOL §7). */
  gate: JsonObject | null;
  /** The answer bought through paid inference from the serving model, read back from the chain. */
  paid: InferenceOutcome | null;
  /** The serving root it was bought from. */
  paid_model: string | null;
  measures: { name: string; ours: string; reference: string }[];
  phase_s: Record<string, number>;
  peak_rss_mb: Record<string, number>;
}

/**
 * Counts the accepted uploads and seals of `claimId` in the blocks from `from` to the one with its accepted
 * `resolve` (or `to`), reading each block once.
 */
async function disputeFacts(
  view: ChainView,
  claimId: string,
  from: number,
  to: number,
): Promise<DisputeFacts> {
  let bytes = 0, uploads = 0, seals = 0;
  let challenged: number | null = null, sealed: number | null = null, resolvedAt: number | null = null;
  let previous: number | null = null, longest: number | null = null;
  for (let h = Math.max(1, from); h <= to; h++) {
    const b = await view.get(`/block?height=${h}`);
    if (!isObject(b) || !isObject(b.block)) throw new Error(`Cannot read block ${h} from ${view.url}`);
    const txs = (b.block.txs ?? []) as { body: JsonObject }[];
    const results = (b.results ?? []) as { ok?: boolean }[];
    const time = Number(b.block.time);
    if (sealed !== null && previous !== null) longest = Math.max(longest ?? 0, time - previous);
    previous = time;
    if (resolvedAt !== null) {
      resolvedAt = time; // the block after the resolve's
      break;
    }
    txs.forEach(({ body }, i) => {
      if (results[i]?.ok !== true || body.claim_id !== claimId) return;
      if (body.kind === "challenge") challenged = time;
      else if (body.kind === "upload") {
        uploads++;
        bytes += decodeBase64Strict(body.data)?.length ?? 0;
      } else if (body.kind === "seal") {
        seals++;
        sealed = time;
      } else if (body.kind === "resolve") resolvedAt = time;
    });
  }
  const c = await view.get(`/claim?id=${claimId}`);
  const state = isObject(c) && isObject(c.state) ? c.state : {};
  return {
    claim_id: claimId,
    status: String(state.status ?? "unknown"),
    reason: typeof state.reason === "string" ? state.reason : null,
    bytes,
    txs: uploads + seals,
    uploads,
    seals,
    publish_ms: challenged !== null && sealed !== null ? sealed - challenged : null,
    resolve_ms: sealed !== null && resolvedAt !== null ? resolvedAt - sealed : null,
    longest_block_ms: longest,
  };
}

const sec = (ms: number | undefined) => (ms === undefined ? "-" : (ms / 1000).toFixed(2));
const int = (
  n: number | undefined | null,
) => (n === undefined || n === null ? "-" : n.toLocaleString("en-US"));

/** Reads the report at the proposer's current height. */
export async function collectSmollm2Report(
  layout: DevnetLayout,
  urls: readonly string[],
  s: Smollm2Scenario,
): Promise<Smollm2Report> {
  const summary = await collectSummary(layout, urls);
  const view = new ChainView(urls[0]!);
  const dispute = s.forge_claim === null
    ? null
    : await disputeFacts(view, s.forge_claim, s.forge_from_height ?? 1, summary.height);
  const honest = summary.claims.find((c) => c.status === "settled");
  const cumulative = honest ? s.replay_ms[honest.claim_id] ?? [] : [];
  const replay = cumulative.map((t, i) => t - (i === 0 ? 0 : cumulative[i - 1]!));
  const g = s.growth as { added_parameters?: number; last_block_bytes?: number; status?: string } | null;
  const grownParams = g?.added_parameters === undefined
    ? undefined
    : SMOLLM2_REFERENCE.parameters + g.added_parameters;
  const paid = (await collectInference(layout, urls[0]!, view, summary.height))[0] ?? null;
  const cohorts: EpochCohort[] = [];
  for (const root of s.cohorts) cohorts.push((await epochCohort(view, root)).cohort);
  const decided = s.evaluation === null ? null : await view.get(`/evaluation?id=${s.evaluation}`);
  const evaluation = isObject(decided) ? evaluationOutcome(decided) : null;
  const gateInputs = isObject(decided) && isObject(decided.decision) && isObject(decided.decision.gate)
    ? decided.decision.gate
    : null;
  const gate = (role: "retention" | "fresh") => {
    const g = evaluation?.groups[role];
    return g ? `S=${g.S} Q=${g.Q} G=${g.G} ${g.passed ? "passed" : "failed"}` : "-";
  };
  const R = SMOLLM2_REFERENCE;
  const measures = [
    { name: "trainable parameters", ours: int(R.parameters), reference: int(R.parameters) },
    { name: "full-model step (s)", ours: sec(s.step_ms.honest), reference: R.step_s.toFixed(2) },
    { name: "step on the grown model (s)", ours: sec(s.step_ms.grown), reference: "-" },
    {
      name: "referee replay per stage (s)",
      ours: replay.map((ms) => sec(ms)).join(", ") || "-",
      reference: R.replay_s.join(", "),
    },
    {
      name: "forged: bytes uploaded (ref.: whole stage)",
      ours: int(dispute?.bytes),
      reference: int(R.dispute_bytes),
    },
    {
      name: "forged: upload/seal txs (ref.: whole stage)",
      ours: int(dispute?.txs),
      reference: int(R.dispute_txs),
    },
    {
      name: "forged: publish (s)",
      ours: sec(dispute?.publish_ms ?? undefined),
      reference: R.publish_s.toFixed(2),
    },
    {
      name: "forged: resolve (s)",
      ours: sec(dispute?.resolve_ms ?? undefined),
      reference: R.resolve_s.toFixed(2),
    },
    {
      name: "forged: outcome",
      ours: `${dispute?.status ?? "-"} (${dispute?.reason ?? "-"})`,
      reference: "rejected",
    },
    { name: "parameters after growth", ours: int(grownParams), reference: int(R.grown_parameters) },
    { name: "growth checked from (bytes)", ours: int(g?.last_block_bytes), reference: int(R.growth_bytes) },
    { name: "atoms issued", ours: int(summary.issued), reference: int(R.issued) },
    { name: "validators agree on the app hash", ours: String(summary.validators_agree), reference: "true" },
    { name: "answer", ours: String(s.answer?.text ?? "-"), reference: R.answer },
    {
      name: "cohorts voted in (data root: yes/total power)",
      ours: cohorts.map((c) => `${c.data_root.slice(0, 12)}: ${c.yes_power}/${c.total_power}`).join(", ") ||
        "-",
      reference: "-",
    },
    { name: "gate: retention (8 documents)", ours: gate("retention"), reference: "-" },
    { name: "gate: fresh (8 documents)", ours: gate("fresh"), reference: "-" },
    {
      name: "gate decision (serving root after)",
      ours: evaluation ? `${evaluation.decision} (${evaluation.serving_root_after.slice(0, 12)})` : "-",
      reference: "-",
    },
    { name: "paid: prompt", ours: paid?.prompt ?? "-", reference: "-" },
    { name: "paid answer (serving model)", ours: paid?.answer.trim() ?? "-", reference: "-" },
    {
      name: "paid: serving model (the final one?)",
      ours: s.paid_model === null
        ? "-"
        : `${s.paid_model.slice(0, 12)} (${s.paid_model === s.answer?.model_root ? "yes" : "no"})`,
      reference: "-",
    },
    {
      name: "paid: tokens, paid / refunded atoms",
      ours: paid ? `${paid.tokens.length}, ${int(paid.paid_atoms)} / ${int(paid.refunded_atoms)}` : "-",
      reference: "-",
    },
  ];
  const phase_s = Object.fromEntries(
    Object.entries(s.phase_ms).map(([k, v]) => [k, Math.round(v / 10) / 100]),
  );
  const peak_rss_mb = Object.fromEntries(
    Object.entries(s.peak_rss).sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))
      .map(([k, v]) => [k, Math.round(v / 1024 / 1024)]),
  );
  return {
    summary,
    dispute,
    growth: s.growth,
    answer: s.answer,
    cohorts,
    evaluation,
    gate: gateInputs,
    paid,
    paid_model: s.paid_model,
    measures,
    phase_s,
    peak_rss_mb,
  };
}

/** The report as text for a person: the measures table, phase times, peak RSS, then the claims. */
export function formatSmollm2Report(r: Smollm2Report): string {
  const w = Math.max(...r.measures.map((m) => m.name.length));
  const o = Math.max(4, ...r.measures.map((m) => m.ours.length));
  const lines = [
    "SmolLM2-135M on the devnet — ours beside the reference's published run",
    `${"measure".padEnd(w)}  ${"ours".padEnd(o)}  reference`,
    ...r.measures.map((m) => `${m.name.padEnd(w)}  ${m.ours.padEnd(o)}  ${m.reference}`),
    "",
    `phase wall time (s): ${Object.entries(r.phase_s).map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `peak RSS (MiB): ${Object.entries(r.peak_rss_mb).map(([k, v]) => `${k} ${v}`).join(", ")}`,
    "",
    ...r.summary.claims.map((c) =>
      `claim ${c.claim_id.slice(0, 12)} at height ${c.height}: ${c.status}${
        c.reason ? ` (${c.reason})` : ""
      }` +
      (c.loss === null ? "" : ` loss=${c.loss.toFixed(4)}`)
    ),
    ...r.cohorts.map((c, i) =>
      `cohort ${i + 1} ${
        c.data_root.slice(0, 12)
      } activated at height ${c.activated_height} by ${c.yes_power} of ${c.total_power} voting power`
    ),
    `growth ${String(r.growth?.claim_id ?? "-").slice(0, 12)}: ${r.growth?.status ?? "-"}`,
    ...(r.evaluation === null ? [] : evaluationLines([r.evaluation])),
    `issued ${r.summary.issued} atoms, burned ${r.summary.burned}; training round ${r.summary.training_round}`,
    `validators agree on the app hash at height ${r.summary.height}: ${r.summary.validators_agree}`,
    ...(r.paid === null ? [] : [
      `paid job ${r.paid.job_id.slice(0, 12)} (${r.paid.provider}): ${r.paid.outcome}, ${
        JSON.stringify(r.paid.prompt)
      } → ${
        JSON.stringify(r.paid.answer)
      } in ${r.paid.tokens.length} tokens, paid ${r.paid.paid_atoms}, refunded ${r.paid.refunded_atoms}`,
    ]),
  ];
  return lines.join("\n");
}
