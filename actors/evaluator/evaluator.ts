/**
 * The Evaluator actor (PROTOCOL §7): once the latest cohort's scheduled steps have settled it opens the
 * evaluation, scores every window of the four groups (baseline and candidate × retention and fresh) with
 * forward-only sessions on the workers (`../sponsor/score_pipeline.ts`), submits each score claim, answers
 * availability challenges against its scores, and finishes the evaluation once every window has settled;
 * the ledger decides. It is its own role rather than a phase of the Sponsor: the Sponsor's flow is a budget
 * of paid training steps, while scores mint nothing, may be sent by anyone and outlive the training that
 * preceded them; both share the home layout, the worker clients, the pipeline helpers and the submitter.
 *
 * Each pass scores every open group's next windows, then submits those claims pipelined (consecutive nonces,
 * each journaled before it is sent, all confirmed after), so the four groups' challenge windows run together.
 *
 * Restart safety: every transaction goes through the lost-acknowledgement-safe submitter under an intent
 * named by what it is for — `open:<cohort>`, `score:<evaluation>:<group>:<offset>:<attempt>`,
 * `finish:<evaluation>` — so a restarted evaluator reuses the journaled bytes and never signs a second
 * transaction for the same intent; the attempt at an offset is the number of earlier scores the chain shows
 * refused there (a refuted score reopens the window); each group starts on a different worker (its index in
 * the group order) and each attempt rotates the workers by one more, so a forger is not asked twice in a row. The score pipeline is re-delivery-safe, so re-running it returns the workers'
 * recorded results and the same record.
 *
 * @example
 * ```ts
 * import { Evaluator } from "./evaluator.ts";
 * // const e = await Evaluator.open({ home, chain, workers, entries, emit: console.log });
 * // const decision = await e.run();
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import { configFromJson } from "../../kernels/config.ts";
import { place } from "../../kernels/placement.ts";
import { txid } from "../../ledger/envelope.ts";
import { type ChainClient, envelopeOf } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import { publishNeeded, submitBatch, submitSettled, type TxSpec } from "../common/publish.ts";
import type { WorkerClient, WorkerEntry } from "../common/worker_client.ts";
import { Submitter } from "../runtime/submit.ts";
import { runScorePipeline } from "../sponsor/score_pipeline.ts";

/** One progress event. */
export interface EvaluatorEvent extends JsonObject {
  event: string;
  evaluation: string | null;
  detail: string;
}

/** What an evaluator runs with. */
export interface EvaluatorSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly workers: readonly WorkerClient[];
  readonly entries: readonly WorkerEntry[];
  readonly emit: (e: EvaluatorEvent) => void;
  readonly pollMs?: number;
}

/**
 * The order a pass scores and submits the groups in: the candidate's first, so a referee that checks claims in
 * the order they were committed reaches the scores that could move the serving root first.
 */
const SCORE_ORDER = ["candidate", "baseline"] as const;
const ROLES = ["retention", "fresh"] as const;
const GROUPS = ["baseline_retention", "baseline_fresh", "candidate_retention", "candidate_fresh"];

/** The next windows of one group to score. */
interface ScoreWork {
  readonly side: "baseline" | "candidate";
  readonly role: "retention" | "fresh";
  readonly offset: number;
}

/** An evaluator over one home. */
export class Evaluator {
  private constructor(
    readonly setup: EvaluatorSetup,
    readonly submitter: Submitter,
  ) {}

  /** Opens the submitter over the home's journal. */
  static open(setup: EvaluatorSetup): Promise<Evaluator> {
    const submitter = new Submitter(setup.home.journal, setup.chain.http, { confirmMs: 30_000, pollMs: 200 });
    return Promise.resolve(new Evaluator(setup, submitter));
  }

  /** Runs the evaluation of the latest trained cohort to its decision; returns the evaluation's answer. */
  async run(): Promise<JsonObject> {
    return await this.decide(await this.open());
  }

  /**
   * Settles what an earlier process left in flight, then waits for a trained cohort not yet evaluated and
   * opens (or finds) its evaluation; its id. A caller that journals the id before scoring (the epoch
   * controller) calls this, then `decide`.
   */
  async open(): Promise<string> {
    await this.resume();
    return await this.openWhenTrained();
  }

  /** Scores evaluation `evaluationId` to its decision (finishing it); returns the evaluation's answer. */
  async decide(evaluationId: string): Promise<JsonObject> {
    await this.resume();
    for (;;) {
      try {
        const e = await this.setup.chain.evaluation(evaluationId);
        if (e === null) throw new ProtocolError("not_found", `Cannot follow evaluation ${evaluationId}`);
        if (e.status === "decided") {
          const d = e.decision as JsonObject;
          this.say(evaluationId, "decided", `${d.promoted ? "promoted" : "not promoted"} (${d.reason})`);
          return e;
        }
        await this.answerAvailability(evaluationId, e);
        const groups = e.groups as Record<string, { settled: number; total: number; pending: string | null }>;
        const open = Object.values(groups).some((g) => g.pending !== null || g.settled < g.total);
        if (!open) await this.finish(evaluationId);
        else {
          const next: ScoreWork[] = [];
          for (const side of SCORE_ORDER) {
            for (const role of ROLES) {
              const g = groups[`${side}_${role}`]!;
              if (g.pending === null && g.settled < g.total) next.push({ side, role, offset: g.settled });
            }
          }
          await this.scoreGroups(evaluationId, e, next);
        }
      } catch (e) {
        if (!(e instanceof RetryableError)) throw e;
        this.say(evaluationId, "waiting", e.message);
      }
      await this.pause();
    }
  }

  /**
   * Settles every transaction an earlier process signed but did not see decided (killed after sending it),
   * with its journaled bytes: the chain's record of its hash decides, nothing is signed again.
   */
  private async resume(): Promise<void> {
    for (const r of this.submitter.records()) {
      if (r.status === "committed" || r.status === "rejected") continue;
      await submitSettled(this.submitter, r.intent, () => Promise.reject(new Error("never re-signed")));
    }
  }

  /** Waits for a trained cohort not yet evaluated, then opens (or finds) its evaluation; its id. */
  private async openWhenTrained(): Promise<string> {
    const { chain, home } = this.setup;
    for (;;) {
      const lc = await chain.lifecycle().catch(() => null);
      const cohort = lc?.data?.cohort ?? null;
      if (lc !== null && lc.data === null) {
        throw new ProtocolError(
          "invalid_value",
          `Cannot evaluate on chain at ${chain.url}: it has no data lifecycle`,
        );
      }
      if (cohort !== null && cohort.status === "trained") {
        const intent = `open:${cohort.data_root}`;
        const mine = this.submitter.record(intent);
        const facts = await chain.evaluation();
        const live = (facts?.live as JsonObject | null)?.evaluation_id as string | undefined;
        const recent = (facts?.recent as JsonObject[] | undefined)?.find((r) =>
          r.cohort === cohort.data_root
        );
        if (mine === null && live !== undefined) return live; // someone else opened it
        if (mine === null && recent !== undefined) return recent.evaluation_id as string;
        this.say(null, "open", `cohort ${cohort.data_root}`);
        const s = await submitSettled(
          this.submitter,
          intent,
          () => chain.sign(home.key, "open_evaluation", {}),
        );
        if (s.status === "committed") {
          const id = txid(envelopeOf(s.raw) as never);
          this.say(id, "opened", `at height ${s.height}`);
          return id;
        }
        this.say(null, "open refused", `${s.code}: ${s.message}`);
        if (live !== undefined) return live;
      }
      await this.pause();
    }
  }

  /**
   * Scores the next windows of each open group (one attempt each, computed concurrently on the workers), then
   * submits the claims pipelined in `SCORE_ORDER`: signed with consecutive nonces, journaled and broadcast in
   * order, then confirmed, so the groups' challenge windows run side by side instead of one group waiting for
   * another's commit.
   */
  private async scoreGroups(evaluationId: string, e: JsonObject, work: readonly ScoreWork[]): Promise<void> {
    const { chain, home } = this.setup;
    const scores = e.scores as { side: string; role: string; offset: number; status: string }[];
    const prepared = await Promise.all(work.map((w) => this.prepareScore(evaluationId, e, scores, w)));
    const txs = prepared.filter((p) => p !== null).map((p) => p.tx);
    const losses = prepared.filter((p) => p !== null).map((p) => p.losses);
    if (txs.length === 0) return;
    await submitBatch(chain, this.submitter, home.key, txs, (what, s) => {
      const i = txs.findIndex((t) => t.what === what);
      this.say(
        evaluationId,
        s.status === "committed" ? "scored" : "score refused",
        s.status === "committed" ? `${what}: ${losses[i]}` : `${what}: ${s.code}: ${s.message}`,
      );
    });
  }

  /** Computes one group's next score (null when its claim is committed and the chain does not show it yet). */
  private async prepareScore(
    evaluationId: string,
    e: JsonObject,
    scores: { side: string; role: string; offset: number; status: string }[],
    { side, role, offset }: ScoreWork,
  ): Promise<{ tx: TxSpec; losses: string } | null> {
    const { chain } = this.setup;
    const attempt = scores.filter((s) => s.side === side && s.role === role && s.offset === offset).length;
    const intent = `score:${evaluationId}:${side}_${role}:${offset}:${attempt}`;
    if (this.submitter.record(intent)?.status === "committed") return null; // waiting for the chain to show it
    const modelRoot = e[side] as string;
    const manifest = await chain.manifest(modelRoot);
    const partitions = place(configFromJson(manifest.config), this.setup.entries.map((x) => x.capacity));
    const n = this.setup.workers.length;
    // Each group starts on another worker, and each retry at an offset moves on by one more.
    const shift = attempt + GROUPS.indexOf(`${side}_${role}`);
    const rotated = this.setup.workers.map((_, i) => this.setup.workers[(i + shift) % n]!);
    const roots = ((e.windows as JsonObject)[role] as string[]).slice(offset, offset + 4);
    const windows = await Promise.all(roots.map((r) => chain.batch(r)));
    this.say(
      evaluationId,
      "score",
      `${side} ${role} windows ${offset}-${offset + roots.length - 1} attempt ${attempt}`,
    );
    const out = await runScorePipeline({
      workers: rotated.slice(0, partitions.length),
      pool: this.setup.workers,
      partitions,
      manifest,
      modelRoot,
      windows,
      chainId: (await chain.status()).chain_id,
      score: { evaluation_id: evaluationId, side, role, offset, attempt },
    });
    const tx: TxSpec = {
      base: { score: intent },
      intent,
      kind: "score",
      fields: {
        evaluation_id: evaluationId,
        side,
        role,
        offset,
        record_root: out.recordRoot,
        metadata: out.metadata,
      },
      what: `${side} ${role} ${offset}`,
    };
    return { tx, losses: out.head.losses.join(" ") };
  }

  /** Publishes what an availability challenge against one of its live scores asks for. */
  private async answerAvailability(evaluationId: string, e: JsonObject): Promise<void> {
    const me = this.setup.home.key.accountId;
    for (const s of e.scores as { claim_id: string; owner: string; status: string }[]) {
      if (s.owner !== me || !["challenged", "uploading"].includes(s.status)) continue;
      const answer = await this.setup.chain.score(s.claim_id);
      const ch = ((answer?.state as JsonObject | undefined)?.claim as JsonObject | undefined)?.challenge as
        | { owner: string; kind: string; stage: number; needed: string[]; uploads: []; sealed: string[] }
        | null
        | undefined;
      if (!ch || ch.kind !== "availability" || ch.needed.every((r) => ch.sealed.includes(r))) continue;
      this.say(evaluationId, "answering availability challenge", s.claim_id);
      await publishNeeded({
        chain: this.setup.chain,
        submitter: this.submitter,
        key: this.setup.home.key,
        claimId: s.claim_id,
        challenge: ch,
        fetch: (root) => this.fetchAnywhere(root),
      });
    }
  }

  private async finish(evaluationId: string): Promise<void> {
    const intent = `finish:${evaluationId}`;
    if (this.submitter.record(intent)?.status === "committed") return;
    this.say(evaluationId, "finish", "every window has settled");
    const s = await submitSettled(
      this.submitter,
      intent,
      () => this.setup.chain.sign(this.setup.home.key, "finish_evaluation", { evaluation_id: evaluationId }),
    );
    if (s.status === "rejected") this.say(evaluationId, "finish refused", `${s.code}: ${s.message}`);
  }

  private async fetchAnywhere(root: string): Promise<Uint8Array | null> {
    for (const w of this.setup.workers) {
      try {
        return await w.getObject(root);
      } catch { /* try the next */ }
    }
    return null;
  }

  private say(evaluation: string | null, event: string, detail: string): void {
    this.setup.emit({ event, evaluation, detail });
  }

  private async pause(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.setup.pollMs ?? 300));
  }
}
