/**
 * The devnet's closing summary, gathered from the chain after the scenario: every claim in order with its
 * loss and outcome (and why a rejected one was rejected), the learning and serving roots, the paid answers of
 * the inference phase (prompt, answer text, tokens, paid and refunded atoms), the atoms issued and burned (the supply totals of a validator's state), every named account's balance, and whether every
 * validator holds the same app hash at the final height. Printed as text or as one canonical JSON object.
 *
 * @example
 * ```ts
 * import { collectSummary, formatSummary } from "./summary.ts";
 * // const s = await collectSummary(layout, validatorUrls); console.log(formatSummary(s));
 * ```
 */
import { DatabaseSync } from "node:sqlite";
import type { JsonObject } from "../core/canonical.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import { parseJson } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { loadCodec } from "../text/codec.ts";
import { ChainView, type ClaimOutcome } from "./chain_view.ts";
import { loadInferenceJobs } from "./inference_phase.ts";
import { collectEvaluations, evaluationLines, type EvaluationOutcome } from "./evaluation_summary.ts";

/** The summary of a devnet run. */
export interface DevnetSummary extends JsonObject {
  height: number;
  app_hash: string;
  /** True when every validator's block at `height` has `app_hash`. */
  validators_agree: boolean;
  app_hashes: { validator: string; app_hash: string | null }[];
  training_round: number;
  learning_root: string | null;
  serving_root: string | null;
  claims: (ClaimOutcome & JsonObject)[];
  settled: number;
  rejected: { claim_id: string; reason: string | null }[];
  issued: number;
  burned: number;
  balances: { name: string; account: string; balance: number }[];
  /** The paid answers of the inference phase, in question order (empty when it did not run). */
  inference: InferenceOutcome[];
  /** The validators' consensus engine (set by the scenario). */
  engine?: "embedded" | "cometbft";
  /** The active cohort the devnet trained on, or null on a chain without the data lifecycle. */
  cohort: CohortSummary | null;
  /** True when every claim trained on a batch of the active cohort's schedule. */
  trained_on_admitted: boolean;
  /** Every decided evaluation, oldest first (empty before the evaluation phase). */
  evaluations: EvaluationOutcome[];
}

/** One paid answer as the chain settled it. */
export interface InferenceOutcome extends JsonObject {
  provider: string;
  prompt: string;
  job_id: string;
  status: string;
  answer: string;
  tokens: number[];
  paid: number;
  refunded: number;
  /** Responses the job received (2 when the first was refuted and the retry settled). */
  responses: number;
}

/** Reads the journaled jobs of the inference phase back from the chain, decoding each answer. */
export async function collectInference(layout: DevnetLayout, rpc: string): Promise<InferenceOutcome[]> {
  const rows = await loadInferenceJobs(layout.dir);
  if (rows.length === 0) return [];
  const chain = new ChainClient(rpc);
  const genesis = parseJson(await Deno.readTextFile(layout.genesisPath)) as { codec: { root: string } };
  const codec = await loadCodec(new ObjectStore(layout.objects), genesis.codec.root);
  const out: InferenceOutcome[] = [];
  for (const row of rows) {
    const j = await chain.inference(row.job_id);
    const s = (j?.state ?? {}) as {
      status?: string;
      job?: { max_price: number; price_per_token: number };
      response?: { record_root: string; tokens: number };
    };
    const record = s.status === "settled"
      ? (j!.metadata ?? {})[s.response!.record_root] as {
        tokens: number[];
        stop: string;
      }
      : null;
    const tokens = record?.tokens ?? [];
    const paid = record ? s.response!.tokens * s.job!.price_per_token : 0;
    out.push({
      ...row,
      status: s.status ?? "unknown",
      answer: codec.decode(record?.stop === "eos" ? tokens.slice(0, -1) : tokens),
      tokens,
      paid,
      refunded: (s.job?.max_price ?? 0) - paid,
      responses: j?.claims.length ?? 0,
    });
  }
  return out;
}

/** The admitted cohort: who voted it in and what it holds. */
export interface CohortSummary extends JsonObject {
  data_root: string;
  proposal: string;
  /** The validators (by name) whose owners voted yes. */
  voters: string[];
  documents: { retention: number; fresh: number; train: number };
  windows: { source: string; start: number; end: number }[];
  steps: number;
  position: number;
}

/** The active cohort from a validator's `/lifecycle`, `/data/proposal` and the devnet's names. */
async function cohortSummary(view: ChainView, layout: DevnetLayout): Promise<
  { summary: CohortSummary; schedule: string[] } | null
> {
  const lc = await view.get("/lifecycle") as {
    data?: {
      cohort: {
        data_root: string;
        proposal: string;
        steps: number;
        position: number;
        schedule: { batch: string }[];
      } | null;
    } | null;
  };
  const c = lc.data?.cohort;
  if (!c) return null;
  const p = await view.get(`/data/proposal?id=${c.proposal}`) as {
    state: { votes: [string, boolean][] };
    document: { windows: CohortSummary["windows"]; documents: { role: string }[] };
  };
  const names = new Map(Object.entries(layout.accounts).map(([name, account]) => [account, name]));
  const count = (role: string) => p.document.documents.filter((d) => d.role === role).length;
  return {
    summary: {
      data_root: c.data_root,
      proposal: c.proposal,
      voters: p.state.votes.filter(([, yes]) => yes).map(([owner]) => names.get(owner) ?? owner),
      documents: { retention: count("retention"), fresh: count("fresh"), train: count("train") },
      windows: p.document.windows,
      steps: c.steps,
      position: c.position,
    },
    schedule: c.schedule.map((s) => s.batch),
  };
}

/** `{genesis_supply, issued, burned}` read from a validator's state file (read-only). */
export function supplyTotals(home: string): { genesis_supply: number; issued: number; burned: number } {
  const db = new DatabaseSync(`${home}/state.sqlite`, { readOnly: true });
  try {
    const row = db.prepare("SELECT value FROM state WHERE tbl = 'totals' AND key = 'supply'").get() as
      | { value: string }
      | undefined;
    return row ? JSON.parse(row.value) : { genesis_supply: 0, issued: 0, burned: 0 };
  } finally {
    db.close();
  }
}

/**
 * Gathers the summary at the proposer's current height: waits (up to 20 s) for every replica to commit that
 * height and compares their app hashes.
 */
export async function collectSummary(layout: DevnetLayout, urls: readonly string[]): Promise<DevnetSummary> {
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
  const claims = await proposer.claims(height);
  const balances = [];
  for (const [name, account] of Object.entries(layout.accounts)) {
    balances.push({ name, account, balance: await proposer.balance(account) });
  }
  const totals = supplyTotals(layout.validators[0]!);
  const cohort = await cohortSummary(proposer, layout);
  return {
    height,
    app_hash,
    validators_agree: app_hashes.every((h) => h.app_hash === app_hash && app_hash !== ""),
    app_hashes,
    training_round: lc.training_round,
    learning_root: lc.learning_root,
    serving_root: lc.serving_root,
    claims: claims as (ClaimOutcome & JsonObject)[],
    settled: claims.filter((c) => c.status === "settled").length,
    rejected: claims.filter((c) => c.status === "rejected").map((c) => ({
      claim_id: c.claim_id,
      reason: c.reason,
    })),
    issued: totals.issued,
    burned: totals.burned,
    balances,
    inference: await collectInference(layout, urls[0]!),
    cohort: cohort?.summary ?? null,
    trained_on_admitted: cohort !== null &&
      claims.every((c) => c.batch !== null && cohort.schedule.includes(c.batch)),
    evaluations: await collectEvaluations(proposer),
  };
}

const neuro = (atoms: number) => `${(atoms / 1_000_000).toFixed(6)} NEURO`;

/** The summary as text lines for a person. */
export function formatSummary(s: DevnetSummary): string {
  const lines = ["", "=== devnet summary ==="];
  lines.push(`height ${s.height}, training round ${s.training_round}, learning root ${s.learning_root}`);
  lines.push(`serving root ${s.serving_root}`);
  lines.push("claims:");
  for (const [i, c] of s.claims.entries()) {
    const loss = c.loss === null ? "?" : c.loss.toFixed(4);
    const why = c.reason ? ` (${c.reason})` : "";
    lines.push(`  ${i + 1}. height ${c.height}  loss ${loss}  ${c.status}${why}  ${c.claim_id}`);
  }
  lines.push(`settled steps ${s.settled}, rejected claims ${s.rejected.length}`);
  for (const r of s.rejected) lines.push(`  rejected ${r.claim_id}: ${r.reason ?? "no reason given"}`);
  if (s.cohort) {
    const c = s.cohort;
    lines.push(
      `cohort ${c.data_root}: ${c.documents.retention} retention, ${c.documents.fresh} fresh, ${c.documents.train} ` +
        `train documents from ${c.windows.map((w) => `${w.source} ${w.start}-${w.end - 1}`).join(", ")}`,
    );
    lines.push(
      `  voted in by ${c.voters.join(", ")}; ${c.position} of ${c.steps} scheduled steps trained; ` +
        (s.trained_on_admitted
          ? "every claim trained on an admitted batch"
          : "a claim trained on a batch NOT in the schedule"),
    );
  }
  lines.push(...evaluationLines(s.evaluations));
  lines.push(`atoms issued ${s.issued} (${neuro(s.issued)}), burned ${s.burned} (${neuro(s.burned)})`);
  if (s.inference.length > 0) lines.push("paid answers:");
  for (const [i, a] of s.inference.entries()) {
    const again = a.responses > 1
      ? ` after ${a.responses - 1} refuted response${a.responses > 2 ? "s" : ""}`
      : "";
    lines.push(
      `  ${i + 1}. ${a.provider}: ${JSON.stringify(a.prompt)} → ${
        JSON.stringify(a.answer)
      }  ${a.tokens.length} tokens, ` +
        `${a.status}${again}, paid ${a.paid}, refunded ${a.refunded} atoms  ${a.job_id}`,
    );
  }
  lines.push("balances:");
  for (const b of s.balances) {
    lines.push(`  ${b.name.padEnd(12)} ${String(b.balance).padStart(16)} atoms  ${b.account}`);
  }
  lines.push(
    s.validators_agree
      ? `all ${s.app_hashes.length} ${
        s.engine ?? "embedded"
      } validators agree on the app hash at height ${s.height}: ${s.app_hash}`
      : `validators DISAGREE at height ${s.height}: ${
        s.app_hashes.map((h) => `${h.validator} ${h.app_hash}`).join(", ")
      }`,
  );
  return lines.join("\n");
}
