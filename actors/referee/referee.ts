/**
 * The Referee actor (ARCHITECTURE "Actors", PROTOCOL §5, §7.1, §8.1, §10.5): the honest online observer. It scans
 * every committed block for `claim`, `grow`, `respond` and `score` transactions (so it sees every claim, even those
 * made while it was down), checks every stage of every training claim with the kernels' referee (a growth:
 * its grown manifest from the parent's last block, `replayGrowth`; an inference response: each partition of
 * its prefill and its head, `check_response.ts`; a score claim: each partition of its forward graph and its
 * head, `check_score.ts`), and on a mismatch files a fraud challenge,
 * uploads the stage's needed objects in 1 MiB chunks, seals them and calls `resolve`; an object nobody
 * serves gets an availability challenge. It reports how far behind it is: blocks not yet scanned and stages
 * not yet checked.
 *
 * Journaled: each stage check is a durable operation (`id({session: claim, operation: {stage}})`) whose
 * verdict is recorded, so a restart never replays a checked stage again; the scan height and each claim's
 * outcome are rows of the same journal; challenges, uploads, seals and resolves go through the submitter.
 *
 * Workflow journal: each training claim the referee disputes is followed as a `training` machine instance
 * named by the claim id (`../common/job_track.ts`), from the reserved assignment the claim answered: the
 * claim, the challenges, uploads, seals and resolve the chain applied and the ticks that decide it, each
 * recorded as soon as the referee observes its block and before the referee sends its next transaction.
 * The durable executor replays these instances on open (a divergence stops the referee).
 *
 * @example
 * ```ts
 * import { Referee } from "./referee.ts";
 * // const r = await Referee.open({ home, chain, workers, emit: console.log });
 * // await r.runOnce(); // scan, check, challenge; returns the status
 * ```
 */
import { canonical, decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import type { ChainClient } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import type { WorkerClient } from "../common/worker_client.ts";
import { defineActor, DurableActor } from "../runtime/durable.ts";
import { operationId } from "../runtime/journal.ts";
import { Submitter } from "../runtime/submit.ts";
import { EventLog } from "../runtime/event_log.ts";
import { txid } from "../../ledger/envelope.ts";
import { type Assignment, reserve, training } from "../../workflows/training.ts";
import { type ChainSetup, findChainSetup } from "../common/chain_setup.ts";
import { JobTrack } from "../common/job_track.ts";
import { checkGrowth, type CheckSources, checkStage, claimRecord, type StageVerdict } from "./check.ts";
import { checkResponseStage, responseRecord } from "./check_response.ts";
import { checkScoreStage, scoreRecordOf } from "./check_score.ts";
import { ClaimLog, type ClaimRow, claimsOfBlock } from "./claim_log.ts";
import { dispute } from "./dispute.ts";

/** The referee's progress. */
export interface RefereeStatus extends JsonObject {
  event: "status";
  height: number;
  scanned: number;
  /** Blocks not yet scanned. */
  behind_blocks: number;
  claims: number;
  stages_checked: number;
  /** Stages of known claims not yet checked. */
  behind_stages: number;
  challenges: number;
}

/** One event the referee reports (a verdict, a challenge, an outcome). */
export interface RefereeEvent extends JsonObject {
  event: string;
  claim_id: string;
  stage: number | null;
  detail: string;
}

/** What a referee runs with. */
export interface RefereeSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly workers: readonly WorkerClient[];
  readonly emit: (e: RefereeEvent | RefereeStatus) => void;
}

const LIVE = new Set(["claimed", "challenged", "uploading", "resolving", "responded"]);
/** Ends of a claim that mean it was refuted (a training claim rejected, an inference response refuted). */
const CAUGHT = new Set(["rejected", "refuted", "reopened"]);

/** A referee over one home. */
export class Referee {
  /** The genesis facts for the workflow journal: undefined until looked up, null when not found. */
  private chainSetup: ChainSetup | null | undefined = undefined;
  /** The journaled tracks of the claims disputed, by claim id. */
  private readonly tracks = new Map<string, JobTrack>();
  /** The workflow event log in the referee's journal. */
  private readonly events: EventLog;

  private constructor(
    readonly setup: RefereeSetup,
    readonly actor: DurableActor,
    readonly submitter: Submitter,
    readonly log: ClaimLog,
  ) {
    this.events = new EventLog(setup.home.journal);
  }

  /** Opens the journal (re-running any check begun before a crash). */
  static async open(setup: RefereeSetup): Promise<Referee> {
    const src: CheckSources = { chain: setup.chain, store: setup.home.store, workers: setup.workers };
    const def = defineActor({
      name: "referee",
      machines: [training as never],
      handlers: {
        check: async (_ctx, input) => {
          const { claim_id, stage, kind } = input as { claim_id: string; stage: number; kind?: string };
          if (kind === "response") return await checkResponseStage(src, claim_id, stage);
          if (kind === "score") return await checkScoreStage(src, claim_id, stage);
          return kind === "growth"
            ? await checkGrowth(src, claim_id)
            : await checkStage(src, claim_id, stage);
        },
      },
    });
    const actor = await DurableActor.open(setup.home.journal, def);
    const submitter = new Submitter(setup.home.journal, setup.chain.http, { confirmMs: 30_000, pollMs: 200 });
    return new Referee(setup, actor, submitter, new ClaimLog(setup.home.journal));
  }

  /** The last scanned height. */
  scanned(): number {
    return this.log.scanned();
  }

  /** Scans new blocks for claims. */
  private async scan(height: number): Promise<void> {
    for (let h = this.log.scanned() + 1; h <= height; h++) {
      const answer = await this.setup.chain.block(h) as {
        block: { txs: JsonValue[] };
        results: { ok: boolean }[];
      };
      const found = claimsOfBlock(answer);
      this.log.recordBlock(h, found);
      for (const c of found) {
        this.setup.emit({ event: "claim", claim_id: c.id, stage: null, detail: `${c.kind} at height ${h}` });
      }
    }
  }

  /**
   * The latest recorded verdict of a stage (null when none) and the operation id of its next check. A stage
   * is checked again only after an `unavailable` verdict whose availability challenge was answered: check
   * `k` of a stage is the operation `id({session: claim, operation: {stage}})` for k = 0, else
   * `{stage, retry: k}`.
   */
  private verdictOf(claimId: string, stage: number): { v: StageVerdict | null; next: string } {
    let v: StageVerdict | null = null;
    for (let k = 0;; k++) {
      const opId = operationId(claimId, k === 0 ? { stage } : { stage, retry: k });
      const op = this.setup.home.journal.operation(opId);
      if (op?.status !== "done" || op.result === null) return { v, next: opId };
      const r = decodeCanonical(op.result) as { ok: boolean; value?: StageVerdict };
      if (!r.ok) return { v, next: opId };
      v = r.value!;
    }
  }

  /**
   * The check the referee's own recorded verdicts name for a claim the chain no longer shows (a refuted
   * response whose job reopened): `mismatch: <check>` or `unavailable <root>`, or "" when none is recorded.
   */
  private recordedReason(c: ClaimRow): string {
    for (let stage = 0; stage < (c.stages ?? 0); stage++) {
      const v = this.verdictOf(c.claim_id, stage).v;
      if (v?.verdict === "mismatch") return `mismatch: ${v.what}`;
      if (v?.verdict === "unavailable") return `unavailable ${v.root}`;
    }
    return "";
  }

  /** Counts for the status line. */
  status(height: number): RefereeStatus {
    const claims = this.log.claims();
    let checked = 0, behind = 0;
    for (const c of claims) {
      const n = c.stages ?? 0;
      for (let s = 0; s < n; s++) this.verdictOf(c.claim_id, s).v === null ? behind++ : checked++;
      if (c.stages === null) behind++;
    }
    const challenges = this.submitter.records().filter((s) => s.intent.startsWith("challenge:")).length;
    return {
      event: "status",
      height,
      scanned: this.scanned(),
      behind_blocks: Math.max(0, height - this.scanned()),
      claims: claims.length,
      stages_checked: checked,
      behind_stages: behind,
      challenges,
    };
  }

  /** One pass: scan, check every unchecked stage, act on verdicts. Returns the status after the pass. */
  async runOnce(): Promise<RefereeStatus> {
    const { height } = await this.setup.chain.status();
    await this.scan(height);
    for (const c of this.log.claims()) {
      if (c.outcome !== null) continue;
      try {
        await this.handleClaim(c);
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e;
        // One claim the referee cannot read or act on must not stop it watching the others.
        this.setup.emit({
          event: "error",
          claim_id: c.claim_id,
          stage: null,
          detail: `${e.code}: ${e.message}`,
        });
      }
    }
    return this.status(height);
  }

  private finish(claimId: string, outcome: string, detail: string): void {
    this.log.finish(claimId, outcome, detail);
    this.setup.emit({ event: "outcome", claim_id: claimId, stage: null, detail: `${outcome}: ${detail}` });
  }

  private async handleClaim(c: ClaimRow): Promise<void> {
    let stages = 1, state: JsonObject;
    if (c.kind === "score") {
      const r = await scoreRecordOf(this.setup.chain, c.claim_id);
      state = r.state;
      stages = r.traces.length + 1;
    } else if (c.kind === "response") {
      const r = await responseRecord(this.setup.chain, c.claim_id);
      if (r === null) {
        const why = this.recordedReason(c);
        return this.finish(
          c.claim_id,
          "caught",
          `refuted${why === "" ? "" : ` ${why}`}; the job reopened for another response`,
        );
      }
      state = r.job.state;
      stages = r.traces.length + 1;
    } else if (c.kind === "growth") {
      const answer = await this.setup.chain.claim(c.claim_id);
      if (answer === null) throw new ProtocolError("not_found", `Cannot check growth ${c.claim_id}: unknown`);
      state = answer.state;
    } else {
      const r = await claimRecord(this.setup.chain, c.claim_id);
      state = r.state;
      stages = r.record.traces.length;
    }
    if (c.stages === null) {
      this.log.setStages(c.claim_id, stages);
    }
    let bad: { stage: number; v: StageVerdict } | null = null;
    let failed = 0;
    for (let stage = 0; stage < stages; stage++) {
      const latest = this.verdictOf(c.claim_id, stage);
      let v = latest.v;
      const live = (state as { claim?: { challenge: unknown } }).claim?.challenge ?? null;
      const answered = v?.verdict === "unavailable" && live === null &&
        this.submitter.record(`challenge:${c.claim_id}:${stage}:${v.root}`)?.status === "committed";
      if (v === null || answered) {
        // A training check's input stays {claim_id, stage} (journals written before growths were checked).
        const input = c.kind === "training"
          ? { claim_id: c.claim_id, stage }
          : { claim_id: c.claim_id, stage, kind: c.kind };
        const bytes = await this.actor.deliver("check", latest.next, input);
        const r = decodeCanonical(bytes) as { ok: boolean; value?: StageVerdict; message?: string };
        if (!r.ok) continue; // a protocol error reading the claim: left unchecked, reported as behind
        v = r.value!;
        this.setup.emit({
          event: "verdict",
          claim_id: c.claim_id,
          stage,
          detail: verdictDetail(v),
        });
      }
      if (bad === null && (v.verdict === "mismatch" || v.verdict === "unavailable")) bad = { stage, v };
      if (v.verdict === "error") failed++;
    }
    const status = (state as { status: string }).status;
    // A disputed claim stays journaled until it ends, even once its challenges were answered.
    const journaled = c.kind === "training" && (bad !== null || this.events.instance(c.claim_id) !== null);
    const recorded = journaled ? await this.journalDispute(c, state) : null;
    if (recorded !== null && !LIVE.has(status) && canonical(recorded) !== canonical(state)) {
      this.setup.emit({
        event: "error",
        claim_id: c.claim_id,
        stage: null,
        detail: `journal differs from the ledger: ${canonical(recorded)}`,
      });
    }
    if (bad === null) {
      if (!LIVE.has(status)) {
        if (failed > 0) {
          this.finish(c.claim_id, "error", `${failed} stage replays failed; the claim is ${status}`);
        } else this.finish(c.claim_id, "clean", `every stage matches; the claim is ${status}`);
      }
      return;
    }
    if (!LIVE.has(status)) {
      const reason = (state as { reason?: string }).reason ?? "";
      return this.finish(
        c.claim_id,
        CAUGHT.has(status) ? "caught" : "missed",
        `${status} ${reason}`.trim(),
      );
    }
    await dispute(this.setup, this.submitter, c.claim_id, bad.stage, bad.v, state);
  }

  /**
   * Catches the journal of a disputed training claim up with the chain (opening its instance at the reserved
   * assignment the claim answered); returns the recorded state, or null without a genesis.
   */
  private async journalDispute(c: ClaimRow, state: JsonObject): Promise<JsonObject | null> {
    const { chain, home } = this.setup;
    let t = this.tracks.get(c.claim_id);
    if (t === undefined) {
      if (this.chainSetup === undefined) this.chainSetup = await findChainSetup(chain, home.paths.dir);
      const cs = this.chainSetup;
      if (cs === null) return null;
      const b = await chain.block(c.height) as unknown as { block: { txs: JsonValue[] } };
      const index = b.block.txs.findIndex((tx) => txid(tx as never) === c.claim_id);
      const a = (state as unknown as { assignment: Assignment }).assignment;
      const { bond: _bond, expires, ...input } = a;
      const r = reserve(input, { height: expires - cs.params.lease_blocks, time: 0, params: cs.params });
      if (!r.ok || index < 0) {
        throw new ProtocolError(
          "internal_error",
          `Cannot journal claim ${c.claim_id}: ${r.ok ? `not in block ${c.height}` : r.message}`,
        );
      }
      t = JobTrack.open({ chain, log: this.events, setup: cs }, c.claim_id, r.state, {
        height: c.height,
        index,
      });
      this.tracks.set(c.claim_id, t);
    }
    const recorded = await t.catchUp((await chain.status()).height);
    return recorded as unknown as JsonObject;
  }

  /** Runs passes forever, emitting the status after each pass that changed it (and every `everyMs`). */
  async run(options: { pollMs: number; everyMs?: number; signal?: AbortSignal }): Promise<void> {
    let last = "";
    let lastAt = 0;
    while (!options.signal?.aborted) {
      try {
        const s = await this.runOnce();
        const key = JSON.stringify({ ...s, height: 0, scanned: 0 });
        if (key !== last || Date.now() - lastAt > (options.everyMs ?? 10_000)) {
          this.setup.emit(s);
          last = key;
          lastAt = Date.now();
        }
      } catch (e) {
        if (!(e instanceof RetryableError)) throw e;
      }
      await new Promise((r) => setTimeout(r, options.pollMs));
    }
  }
}

/**
 * A verdict as the referee's log line says it: `match`, `mismatch <check>` (the check that failed),
 * `unavailable <root>` or `error <what went wrong>`.
 */
function verdictDetail(v: StageVerdict): string {
  if (v.verdict === "mismatch") return `mismatch ${v.what}`;
  if (v.verdict === "unavailable") return `unavailable ${v.root}`;
  if (v.verdict === "error") return `error ${v.message}`.trim();
  return "match";
}
