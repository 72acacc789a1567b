/**
 * An actor's journal of one training job as events of the `training` machine (`workflows/training.ts`), the
 * machine the ledger applies to the same job (ARCHITECTURE "Workflows are typed machines used twice").
 *
 * The track walks committed blocks from the block that created the job: at each later height it feeds the
 * block-boundary `tick`s the ledger feeds (a tick the machine refuses changes nothing and is not recorded),
 * then every transaction of the block the ledger accepted for this job (`claim`, `challenge`, `upload`,
 * `seal`, `resolve`), with the block's env (height, block time, genesis params). Each event is recorded in
 * the actor's journal (`EventLog`, instance named by the caller) before the track returns the state the
 * actor then acts on, so `deno task replay --journal HOME/journal.sqlite` re-runs the job.
 *
 * What the machine needs beyond the transaction is computed as the ledger computes it, from the claim's
 * metadata and the parent manifest: the model root, the metadata root, the work identity, the objects a
 * challenge needs. Two values are taken from what the ledger decided: an accepted `seal` hashed to its root
 * (the machine refuses any other digest), and an accepted `resolve` carries the referee's verdict, read from
 * the claim's state (a mismatch ends the claim as `rejected: mismatch: <what>`, a match reopens it).
 *
 * Restart: the track starts again from the creating block and re-derives every event; an event already in
 * the journal must be the same (event and env) or the track stops with `journal_divergence`; new ones are
 * appended. So a crash at any point neither loses nor duplicates an event.
 *
 * @example
 * ```ts
 * import { JobTrack } from "./job_track.ts";
 * // const t = await JobTrack.start({ chain, log, params, genesis }, assignmentId, initial, { height, index });
 * // const state = await t.catchUp((await chain.status()).height);
 * ```
 */
import { canonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import { txid } from "../../ledger/envelope.ts";
import { blockNeeded } from "../../kernels/block_referee.ts";
import { committedChunkRoot } from "../../kernels/trace_chunks.ts";
import type { ChallengePhase } from "../../workflows/_claim.ts";
import { claimObjects } from "../../ledger/training/claim_check.ts";
import { decodeBase64Strict, workIdentity } from "../../ledger/training/wire.ts";
import type { MachineEnv } from "../../workflows/machine.ts";
import type { WorkflowParams } from "../../workflows/params.ts";
import { training, type TrainingEvent, type TrainingState } from "../../workflows/training.ts";
import type { ChainClient } from "./chain.ts";
import type { EventLog, EventRecord } from "../runtime/event_log.ts";
import type { ChainSetup } from "./chain_setup.ts";

/** What a track reads and writes. */
export interface TrackDeps {
  readonly chain: ChainClient;
  readonly log: EventLog;
  readonly setup: ChainSetup;
}

/**
 * Where the walk starts: the block that created the job (its boundary tick ran before the job existed) and
 * the index of the first transaction of that block to walk.
 */
export interface TrackStart {
  readonly height: number;
  readonly index: number;
}

type BlockAnswer = {
  height: number;
  block: { time: number; txs: { body: JsonObject; public_key: string }[] };
  results: { ok: boolean }[];
};

const ENDED = new Set(["settled", "rejected", "expired"]);
const DISPUTE = new Set(["challenge", "upload", "seal", "resolve"]);

/** One training job followed on chain and journaled as machine events. */
export class JobTrack {
  private next: number;
  private seq = 0;
  private readonly recorded: readonly EventRecord[];
  private claimId: string | null = null;
  private parts: { parent: Manifest; traces: StageTrace[] } | null = null;

  private constructor(
    private readonly deps: TrackDeps,
    readonly instance: string,
    private state: TrainingState,
    private readonly start: TrackStart,
  ) {
    this.next = start.height;
    this.recorded = deps.log.events(instance);
  }

  /** Opens (creating if new) the journal instance at `initial`; the walk starts after `start`. */
  static open(deps: TrackDeps, instance: string, initial: TrainingState, start: TrackStart): JobTrack {
    deps.log.createInstance(instance, training, initial);
    return new JobTrack(deps, instance, initial, start);
  }

  /** The state after every event walked so far. */
  current(): TrainingState {
    return this.state;
  }

  /** True once the job is settled, rejected or expired. */
  ended(): boolean {
    return ENDED.has(this.state.status);
  }

  /** Walks every committed block up to `height` (stops early once the job ended); returns the state. */
  async catchUp(height: number): Promise<TrainingState> {
    while (this.next <= height && !this.ended()) {
      const b = await this.deps.chain.block(this.next) as unknown as BlockAnswer;
      const env: MachineEnv<WorkflowParams> = {
        height: b.height,
        time: b.block.time,
        params: this.deps.setup.params,
      };
      const first = b.height === this.start.height;
      // The boundary rules run before the block's transactions; up to 3 due ticks, as the ledger runs them.
      for (let i = 0; i < 3 && !first && !this.ended(); i++) {
        if (!training.apply(this.state, { type: "tick" }, env).ok) break;
        this.record({ type: "tick" }, env);
      }
      for (let i = first ? this.start.index : 0; i < b.block.txs.length && !this.ended(); i++) {
        if (b.results[i]?.ok !== true) continue;
        const event = await this.eventOf(b.block.txs[i]!);
        if (event !== null) this.record(event, env);
      }
      this.next++;
    }
    return this.state;
  }

  private record(event: TrainingEvent, env: MachineEnv<WorkflowParams>): void {
    const r = training.apply(this.state, event, env);
    const next = r.ok ? r.state : this.state;
    const outcome = r.ok ? { ok: true } : { ok: false, code: r.code, message: r.message };
    const found = this.recorded[this.seq];
    if (found !== undefined) {
      if (found.event !== canonical(event as never) || found.env !== canonical(env as never)) {
        throw new ProtocolError(
          "journal_divergence",
          `Cannot resume job ${this.instance}: event #${this.seq} is ${found.event}, now ${
            canonical(event as never)
          }`,
        );
      }
    } else {
      this.deps.log.append({ instance: this.instance, event, env, outcome, state: next });
    }
    this.seq++;
    this.state = next;
  }

  /** The machine event of an accepted transaction, or null when it is not about this job. */
  private async eventOf(tx: { body: JsonObject; public_key: string }): Promise<TrainingEvent | null> {
    const body = tx.body, sender = tx.public_key, kind = body.kind as string;
    if (kind === "claim" && this.state.status === "reserved") {
      this.claimId = txid(tx as never);
      const metadata = body.metadata as JsonObject;
      const record = metadata[body.record_root as string] as unknown as StepRecord;
      const parent = await this.deps.chain.manifest(record.parent);
      const a = this.state.assignment;
      const batch = this.deps.setup.data
        ? await this.deps.chain.batch(a.batch)
        : this.deps.setup.batches[a.sequence_index]!;
      this.parts = { parent, traces: record.traces.map((r) => metadata[r] as unknown as StageTrace) };
      const { learning_rate, clip } = this.deps.setup;
      return {
        type: "claim",
        sender,
        claim_id: this.claimId,
        workers: body.workers as string[],
        data_root: body.data_root as string,
        sequence_index: body.sequence_index as number,
        record_root: body.record_root as string,
        model_root: record.model_root,
        work_identity: workIdentity(parent, batch, learning_rate, clip),
        metadata_root: id(metadata as JsonValue),
      };
    }
    if (!DISPUTE.has(kind) || this.state.status === "reserved") return null;
    if (body.claim_id !== this.claimIdOf()) return null;
    if (kind === "challenge") {
      const stage = body.stage as number;
      const root = (body.object_root ?? null) as string | null;
      const p = await this.claimParts();
      let needed: string[] = [];
      if (body.challenge_kind === "fraud" && root === null && p.traces[stage] !== undefined) {
        needed = blockNeeded(p.parent, p.traces[stage]!, stage, body.block, body.phase) ?? [];
      }
      if (
        body.challenge_kind === "availability" && root !== null && claimObjects(p.parent, p.traces).has(root)
      ) {
        needed = [root];
      }
      // A `chunks` challenge needs the one object whose committed chunk root it disputes.
      const t = p.traces[stage];
      if (
        body.challenge_kind === "fraud" && body.phase === "chunks" && root !== null && t !== undefined &&
        committedChunkRoot([t], root) !== null
      ) {
        needed = [root];
      }
      return {
        type: "challenge",
        sender,
        kind: body.challenge_kind as "fraud" | "availability",
        stage,
        block: (body.block ?? null) as number | "head" | null,
        phase: (body.phase ?? null) as ChallengePhase | null,
        object_root: root,
        needed,
      };
    }
    if (kind === "upload") {
      const size = decodeBase64Strict(body.data)?.length ?? 0;
      return {
        type: "upload",
        sender,
        object_root: body.object_root as string,
        index: body.index as number,
        size,
      };
    }
    if (kind === "seal") {
      return {
        type: "seal",
        sender,
        object_root: body.object_root as string,
        digest: body.object_root as string,
      };
    }
    const answer = await this.deps.chain.claim(this.claimIdOf());
    const s = answer?.state as { status?: string; reason?: string } | undefined;
    const m = /^mismatch: (.+)$/.exec(s?.status === "rejected" ? s.reason ?? "" : "");
    return m === null
      ? { type: "resolve", sender, verdict: "match" }
      : { type: "resolve", sender, verdict: "mismatch", what: m[1] as never };
  }

  private claimIdOf(): string {
    const s = this.state;
    return this.claimId ?? ("claim" in s && s.claim !== null ? s.claim.id : "");
  }

  /** The parent manifest and stage traces of the claim (read from the chain after a restart). */
  private async claimParts(): Promise<{ parent: Manifest; traces: StageTrace[] }> {
    if (this.parts !== null) return this.parts;
    const answer = await this.deps.chain.claim(this.claimIdOf());
    const s = answer!.state as unknown as { work: { record_root: string } };
    const metadata = answer!.metadata;
    const record = metadata[s.work.record_root] as unknown as StepRecord;
    const parent = await this.deps.chain.manifest(record.parent);
    this.parts = { parent, traces: record.traces.map((r) => metadata[r] as unknown as StageTrace) };
    return this.parts;
  }
}
