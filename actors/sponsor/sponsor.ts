/**
 * The Sponsor actor (ARCHITECTURE "Actors", PROTOCOL §5): for each step it charges an attempt in the budget
 * file, waits for the ledger to be free, reserves, places the parent model's components on the workers by
 * capacity, drives the pipeline, claims with the record, metadata and receipts, answers availability
 * challenges against its claim, and watches the claim until the chain decides it.
 *
 * Restart safety: the attempt is charged before its `reserve` is signed; every transaction goes through the
 * submitter under an intent named by the attempt (`reserve:<n>`, `claim:<n>`), so a restarted sponsor reuses
 * the journaled bytes and never signs a second reserve or claim for an attempt; the pipeline is
 * re-delivery-safe, so re-running it after a crash returns the workers' recorded results and the same record.
 *
 * Workflow journal: each attempt's job is followed as a `training` machine instance named by the assignment
 * id (`../common/job_track.ts`): the reserve creates it, and the ticks and transactions the chain applied to the job
 * are recorded as they are observed, before the sponsor acts on them (claims after the journal has caught
 * up with the reserve's lease; answers a challenge once it is recorded). On open, every instance is replayed
 * through the machine (a divergence stops the sponsor). A claim is recorded when committed, not when sent:
 * its deadlines depend on the block that includes it. When the chain's genesis file cannot be found beside
 * the home (`../common/chain_setup.ts`), the sponsor runs without this journal and says so.
 *
 * @example
 * ```ts
 * import { Sponsor } from "./sponsor.ts";
 * // const s = await Sponsor.open({ home, rpc, workersFile, steps: 3, budget: 6, emit: console.log });
 * // await s.run();
 * ```
 */
import { canonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import { configFromJson } from "../../kernels/config.ts";
import { place } from "../../kernels/placement.ts";
import { txid } from "../../ledger/envelope.ts";
import { type ChainClient, envelopeOf } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import { answerChunkTree, publishNeeded, submitSettled } from "../common/publish.ts";
import type { WorkerClient, WorkerEntry } from "../common/worker_client.ts";
import { EventLog } from "../runtime/event_log.ts";
import { formatDivergence, replayInstance } from "../runtime/replay.ts";
import { Submitter } from "../runtime/submit.ts";
import { reserve as reserveState, training } from "../../workflows/training.ts";
import { type Attempt, Budget } from "./budget.ts";
import { type ChainSetup, findChainSetup } from "../common/chain_setup.ts";
import { JobTrack } from "../common/job_track.ts";
import { runPipeline } from "./pipeline.ts";

/** One progress event. */
export interface SponsorEvent extends JsonObject {
  event: string;
  attempt: number;
  step: number;
  phase: string;
  height: number;
  loss: string | null;
}

/** What a sponsor runs with. */
export interface SponsorSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly workers: readonly WorkerClient[];
  readonly entries: readonly WorkerEntry[];
  /** Settled steps to reach (counted over every run of this home). */
  readonly steps: number;
  /** Attempts in a new budget file. */
  readonly budget: number;
  readonly emit: (e: SponsorEvent) => void;
  readonly pollMs?: number;
}

const FINAL = new Set(["settled", "rejected", "expired"]);

/** The genesis batch of `round` on a chain without the data lifecycle (`training_batches[round mod n]`). */
function genesisBatch(
  cs: ChainSetup,
  round: number,
): { data_root: string; sequence_index: number; batch: string } {
  const seq = round % cs.batches.length;
  return { data_root: cs.data_root, sequence_index: seq, batch: id(cs.batches[seq] as unknown as JsonValue) };
}

/** A sponsor over one home. */
export class Sponsor {
  /** The height when the last attempt failed (the next one waits for a later block). */
  private failedAt = -2;
  /** The genesis facts for the workflow journal: undefined until looked up, null when not found. */
  private chainSetup: ChainSetup | null | undefined = undefined;
  /** The job of the current attempt, journaled as `training` events (null without a genesis). */
  private track: JobTrack | null = null;
  /** The workflow event log in the sponsor's journal. */
  readonly log: EventLog;

  private constructor(
    readonly setup: SponsorSetup,
    readonly budget: Budget,
    readonly submitter: Submitter,
    private readonly accounts: Map<string, WorkerClient>,
  ) {
    this.log = new EventLog(setup.home.journal);
  }

  /** Replays every journaled workflow instance through its machine; throws `journal_divergence` on a mismatch. */
  private checkJournal(): void {
    for (const inst of this.log.instances()) {
      const r = replayInstance(training as never, inst, this.log.replayEvents(inst.instance));
      if (!r.ok) {
        throw new ProtocolError(
          "journal_divergence",
          `Cannot open sponsor: ${formatDivergence(r.divergence)}`,
        );
      }
    }
  }

  /** Opens the budget file and learns every worker's account. */
  static async open(setup: SponsorSetup): Promise<Sponsor> {
    const budget = await Budget.open(`${setup.home.paths.dir}/budget.json`, setup.budget);
    const submitter = new Submitter(setup.home.journal, setup.chain.http, { confirmMs: 30_000, pollMs: 200 });
    const accounts = new Map<string, WorkerClient>();
    for (const w of setup.workers) {
      // A worker still starting (or restarting) is waited for, up to a minute.
      for (let tries = 0;; tries++) {
        try {
          accounts.set((await w.status()).account, w);
          break;
        } catch (e) {
          if (!(e instanceof RetryableError) || tries >= 200) throw e;
          await new Promise((r) => setTimeout(r, 300));
        }
      }
    }
    const sponsor = new Sponsor(setup, budget, submitter, accounts);
    sponsor.checkJournal();
    return sponsor;
  }

  /**
   * Opens the journal instance of the job created by the reserve committed at `height` (the initial state
   * is the machine's `reserve` at that block's env); null when the genesis is unknown.
   */
  private async openTrack(a: Attempt, assignmentId: string, height: number): Promise<JobTrack | null> {
    const { chain, home } = this.setup;
    if (this.chainSetup === undefined) {
      this.chainSetup = await findChainSetup(chain, home.paths.dir);
      if (this.chainSetup === null) this.say(a, "no genesis beside the home: workflow journal off");
    }
    const cs = this.chainSetup;
    if (cs === null) return null;
    const b = await chain.block(height) as unknown as {
      block: { time: number; txs: { body: JsonObject; public_key: string }[] };
    };
    const index = b.block.txs.findIndex((tx) => txid(tx as never) === assignmentId);
    const r = reserveState({
      id: assignmentId,
      owner: home.key.accountId,
      workers: a.workers,
      ...(cs.data ? await this.scheduled(a) : genesisBatch(cs, a.round)),
    }, { height, time: b.block.time, params: cs.params });
    if (!r.ok || index < 0) {
      throw new ProtocolError(
        "internal_error",
        `Cannot journal assignment ${assignmentId}: ${r.ok ? "not in its block" : r.message}`,
      );
    }
    const deps = { chain, log: this.log, setup: cs };
    return JobTrack.open(deps, assignmentId, r.state, { height, index: index + 1 });
  }

  /**
   * The batch the active cohort's schedule binds for the attempt's round: the cohort started at round
   * `training_round − position` (both read from one `/lifecycle` answer), so the round's step is
   * `round − start`.
   */
  private async scheduled(a: Attempt): Promise<{ data_root: string; sequence_index: number; batch: string }> {
    const lc = await this.setup.chain.lifecycle() as unknown as {
      training_round: number;
      data: { cohort: { data_root: string; position: number; schedule: { batch: string }[] } | null } | null;
    };
    const cohort = lc.data?.cohort;
    const step = cohort ? a.round - (lc.training_round - cohort.position) : -1;
    if (!cohort || step < 0 || step >= cohort.schedule.length) {
      throw new ProtocolError(
        "internal_error",
        `Cannot journal attempt ${a.n}: no cohort step for round ${a.round}`,
      );
    }
    return { data_root: cohort.data_root, sequence_index: step, batch: cohort.schedule[step]!.batch };
  }

  private async pause(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.setup.pollMs ?? 300));
  }

  private async say(a: Attempt, phase: string, loss: string | null = null): Promise<void> {
    let height = -1;
    try {
      height = (await this.setup.chain.status()).height;
    } catch { /* the line is still worth printing */ }
    this.setup.emit({ event: "step", attempt: a.n, step: a.round, phase, height, loss });
  }

  /** Runs attempts until `steps` have settled; returns the attempts. */
  async run(): Promise<readonly Attempt[]> {
    while (this.budget.settled() < this.setup.steps) {
      try {
        const a = this.budget.current() ?? await this.chargeWhenFree();
        await this.attempt(a);
      } catch (e) {
        if (!(e instanceof RetryableError)) throw e;
        this.setup.emit({ ...this.event(this.budget.current(), `waiting: ${e.message}`) });
        await this.pause();
      }
    }
    return this.budget.attempts();
  }

  /** Waits for the ledger to be free, then charges the next attempt against its learning root and round. */
  private async chargeWhenFree(): Promise<Attempt> {
    for (;;) {
      const lc = await this.setup.chain.lifecycle().catch(() => null);
      if (lc !== null && (lc.learning_root === null || lc.learning_rate === null || lc.clip === null)) {
        throw new ProtocolError(
          "invalid_value",
          `Cannot train on chain at ${this.setup.chain.url}: its genesis has no model or training section`,
        );
      }
      const free = lc !== null && lc.assignment === null && lc.claim === null && lc.learning_root !== null;
      // After a failed attempt, the ledger counts as free only once a later block is committed: a reserve
      // refused as busy was beaten by one still in the mempool, which the committed state shows a block later.
      if (free && lc.learning_root !== null && lc.height > this.failedAt + 1) {
        const parent = await this.setup.chain.manifest(lc.learning_root);
        const partitions = place(configFromJson(parent.config), this.setup.entries.map((e) => e.capacity));
        const workers = [...this.accounts.keys()].slice(0, partitions.length);
        return await this.budget.charge({ parent: lc.learning_root, round: lc.training_round, workers });
      }
      await this.pause();
    }
  }

  private async fail(a: Attempt, reason: string): Promise<void> {
    this.failedAt = (await this.setup.chain.status().catch(() => ({ height: this.failedAt }))).height;
    await this.budget.finish(a.n, { outcome: "failed", claim_id: null, loss: null, reason });
    await this.say(a, `failed: ${reason}`);
  }

  /** Drives one attempt from its current point to an outcome. */
  private async attempt(a: Attempt): Promise<void> {
    const { chain, home } = this.setup;
    await this.say(a, this.submitter.record(`reserve:${a.n}`) === null ? "reserve" : "resume");
    const reserve = await submitSettled(
      this.submitter,
      `reserve:${a.n}`,
      () => chain.sign(home.key, "reserve", { parent: a.parent, round: a.round, workers: a.workers }),
    );
    if (reserve.status === "rejected") {
      return await this.fail(a, `reserve ${reserve.code}: ${reserve.message}`);
    }
    const assignmentId = txid(envelopeOf(reserve.raw) as never);
    this.track = await this.openTrack(a, assignmentId, reserve.height!);
    let claim = this.submitter.record(`claim:${a.n}`);
    let loss: string | null = null;
    if (claim === null) {
      const lc = await chain.lifecycle();
      const asg = lc.assignment;
      if (asg === null || asg.id !== assignmentId) {
        await this.track?.catchUp(lc.height); // the tick that expired it, before the attempt is given up
        return await this.fail(a, `assignment ${assignmentId} is no longer live`);
      }
      const parent = await chain.manifest(a.parent);
      const batch = await chain.batch(asg.batch);
      const partitions = place(configFromJson(parent.config), this.setup.entries.map((e) => e.capacity));
      const out = await runPipeline({
        workers: a.workers.map((w) => this.accounts.get(w)!),
        pool: [...this.accounts.values()],
        partitions,
        parent,
        batch,
        learningRate: lc.learning_rate!,
        clip: lc.clip!,
        chainId: (await chain.status()).chain_id,
        assignment: assignmentId,
        step: a.round,
        onPhase: (p) => void this.say(a, p),
      });
      loss = out.record.loss;
      // The journal catches up with the job before the claim is sent: an expired lease is recorded first.
      const job = await this.track?.catchUp((await chain.status()).height);
      if (job !== undefined && job.status !== "reserved") {
        return await this.fail(a, `assignment ${assignmentId} is ${job.status}`);
      }
      await this.say(a, "claim", loss);
      claim = await submitSettled(this.submitter, `claim:${a.n}`, () =>
        chain.sign(home.key, "claim", {
          record_root: out.recordRoot,
          metadata: out.metadata,
          workers: a.workers,
          data_root: asg.data_root,
          sequence_index: asg.sequence_index,
        }));
    } else {
      claim = await submitSettled(this.submitter, `claim:${a.n}`, () => {
        throw new ProtocolError("internal_error", "Cannot re-sign a journaled claim");
      });
    }
    if (claim.status === "rejected") return await this.fail(a, `claim ${claim.code}: ${claim.message}`);
    const claimId = txid(envelopeOf(claim.raw) as never);
    const body = envelopeOf(claim.raw).body as { metadata: Record<string, JsonValue>; record_root: string };
    loss = (body.metadata[body.record_root] as { loss: string }).loss;
    await this.watch(a, claimId, loss);
  }

  /** Watches the claim, answering availability challenges, until the chain decides it. */
  private async watch(a: Attempt, claimId: string, loss: string): Promise<void> {
    await this.say(a, "challenge window", loss);
    for (;;) {
      // Every event up to the current block is journaled before the sponsor reacts to the claim's state.
      const height = await this.setup.chain.status().then((s) => s.height).catch(() => null);
      if (height !== null) await this.track?.catchUp(height);
      const c = await this.setup.chain.claim(claimId).catch(() => null);
      const state = c?.state as {
        status?: string;
        reason?: string;
        claim?: { challenge: JsonObject | null };
      };
      if (state?.status !== undefined && FINAL.has(state.status)) {
        await this.checkTrack(a, c!.state);
        const settled = state.status === "settled";
        await this.budget.finish(a.n, {
          outcome: settled ? "settled" : "failed",
          claim_id: claimId,
          loss,
          reason: settled ? null : `${state.status}${state.reason ? `: ${state.reason}` : ""}`,
        });
        return await this.say(
          a,
          settled ? "settled" : `${state.status}${state.reason ? `: ${state.reason}` : ""}`,
          loss,
        );
      }
      const ch = state?.claim?.challenge as
        | { owner: string; kind: string; stage: number; needed: string[]; uploads: []; sealed: string[] }
        | null
        | undefined;
      if (ch && ch.kind === "availability" && ch.needed.some((r) => !ch.sealed.includes(r))) {
        await this.say(a, "answering availability challenge", loss);
        await publishNeeded({
          chain: this.setup.chain,
          submitter: this.submitter,
          key: this.setup.home.key,
          claimId,
          challenge: ch,
          fetch: (root) => this.fetchAnywhere(root),
          committed: answerChunkTree(c!, null),
        }).catch((e) =>
          this.setup.emit({ ...this.event(a, `publish failed: ${(e as Error).message}`), loss })
        );
      }
      await this.pause();
    }
  }

  /** Catches the journal up with the decided job and says so when its state differs from the ledger's. */
  private async checkTrack(a: Attempt, ledgerState: JsonObject): Promise<void> {
    const t = this.track;
    if (t === null) return;
    const recorded = await t.catchUp((await this.setup.chain.status()).height);
    if (canonical(recorded as never) !== canonical(ledgerState)) {
      await this.say(
        a,
        `journal differs from the ledger for job ${t.instance}: ${canonical(recorded as never)}`,
      );
    }
  }

  private event(a: Attempt | null, phase: string): SponsorEvent {
    return { event: "step", attempt: a?.n ?? -1, step: a?.round ?? -1, phase, height: -1, loss: null };
  }

  /** An object's bytes from any worker that holds it. */
  private async fetchAnywhere(root: string): Promise<Uint8Array | null> {
    for (const w of this.accounts.values()) {
      try {
        return await w.getObject(root);
      } catch { /* try the next */ }
    }
    return null;
  }
}
