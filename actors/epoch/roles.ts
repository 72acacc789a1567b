/**
 * The roles an epoch controller drives, each the project's own actor over a role folder of the controller's
 * home (ARCHITECTURE "Actors"): the Curator in `HOME/curator/`, one Sponsor per epoch in
 * `HOME/epoch-<n>/sponsor/` (its attempt budget is the epoch's) and the Evaluator in `HOME/evaluator/`. Every
 * role signs with the controller's one account key and shares its object store (which must hold the chain's
 * codec); each keeps its own journal, so its operations, intents and submissions stay its own and a restart of
 * the controller resumes each role exactly as that role's own command would.
 *
 * The functions here are what the controller's journaled steps run: each is safe to run again after a crash
 * (the roles are durable themselves) and returns a small JSON result that the controller journals.
 *
 * @example
 * ```ts
 * import { Roles } from "./roles.ts";
 * // const roles = new Roles({ home, chain, config, say: console.log });
 * // const cohort = await roles.collectAndPropose({ collect_rows: 256, train_documents: 128 });
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { txid } from "../../ledger/envelope.ts";
import { type ChainClient, envelopeOf } from "../common/chain.ts";
import { type Home, homePaths } from "../common/home.ts";
import { readWorkersFile, WorkerClient, type WorkerEntry } from "../common/worker_client.ts";
import { RpcCuratorChain } from "../curator/chain_data.ts";
import { loadSourcesFile } from "../curator/config.ts";
import { Curator, type ProposalRecord } from "../curator/curator.ts";
import { Evaluator } from "../evaluator/evaluator.ts";
import { Journal } from "../runtime/journal.ts";
import type { Attempt } from "../sponsor/budget.ts";
import { Sponsor } from "../sponsor/sponsor.ts";
import { Submitter } from "../runtime/submit.ts";
import type { EpochConfig } from "./config.ts";
import { growIfRoom, type GrowthOutcome } from "./growth.ts";

/** What the roles run with. */
export interface RolesSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  readonly config: EpochConfig;
  /** A progress line for a person. */
  readonly say: (line: string) => void;
}

/** The cohort a collect-and-propose produced (journaled). */
export interface ProposedCohort extends JsonObject {
  data_root: string;
  proposal: string;
  documents: number;
  status: string;
}

/** How the proposal ended (journaled). */
export interface ActivationOutcome extends JsonObject {
  activated: boolean;
  steps: number;
  activated_height: number | null;
  yes_power: number;
  total_power: number;
  replay_steps: number;
}

/** One training attempt of a step (journaled). */
export interface StepAttempt extends JsonObject {
  index: number;
  assignment_id: string;
  outcome: "settled" | "failed";
  claim_id: string | null;
  loss: string | null;
  reason: string | null;
}

/** The decision of an evaluation (journaled). */
export interface EvaluationOutcome extends JsonObject {
  evaluation_id: string;
  promoted: boolean;
  reason: string;
  gate: JsonObject;
  serving_root: string | null;
}

/** The names of the evaluation's four groups. */
export const GROUPS = ["baseline_retention", "baseline_fresh", "candidate_retention", "candidate_fresh"];

/** The role folder `name` of the controller's home: its own journal, the controller's key and objects. */
export async function roleHome(home: Home, name: string): Promise<Home> {
  const own = homePaths(`${home.paths.dir}/${name}`);
  await Deno.mkdir(own.dir, { recursive: true, mode: 0o700 });
  return {
    paths: { ...own, key: home.paths.key, token: home.paths.token, objects: home.paths.objects },
    key: home.key,
    token: home.token,
    journal: Journal.open(own.journal),
    store: home.store,
  };
}

/** The roles of one controller. */
export class Roles {
  private homes = new Map<string, Home>();
  private curatorActor: Curator | null = null;
  private entries: WorkerEntry[] | null = null;

  constructor(readonly setup: RolesSetup) {}

  /** Closes every role journal opened. */
  close(): void {
    for (const h of this.homes.values()) h.journal.close();
    this.homes.clear();
  }

  private async home(name: string): Promise<Home> {
    const found = this.homes.get(name);
    if (found) return found;
    const h = await roleHome(this.setup.home, name);
    this.homes.set(name, h);
    return h;
  }

  private async workers(): Promise<{ entries: WorkerEntry[]; clients: WorkerClient[] }> {
    this.entries ??= await readWorkersFile(this.setup.config.workers);
    return { entries: this.entries, clients: this.entries.map((e) => new WorkerClient(e.url, e.token)) };
  }

  private async curator(): Promise<Curator> {
    if (this.curatorActor) return this.curatorActor;
    const config = await loadSourcesFile(this.setup.config.sources);
    const chain = new RpcCuratorChain(this.setup.chain);
    this.curatorActor = await Curator.open({ home: await this.home("curator"), config, chain });
    return this.curatorActor;
  }

  /**
   * Collects `collect_rows` more rows of every source, waits until the chain can take a proposal (none
   * pending, no cohort training, no evaluation live), then proposes a cohort (the Curator's operations). A
   * proposal the chain refuses then is `invalid_proposal`: the epoch ends failed.
   */
  async collectAndPropose(
    input: { collect_rows: number; train_documents: number },
    ends: Record<string, number> = {},
  ): Promise<ProposedCohort> {
    const curator = await this.curator();
    // A run killed after its proposal was begun or committed (before this step was journaled) proposed
    // already: that proposal is the epoch's, pending or voted in, and nothing is collected or proposed again.
    const p = (curator.hasRecoveredProposal ? await curator.propose(input.train_documents) : null) ??
      await this.ownLiveProposal(curator) ??
      await this.collectThenPropose(curator, input, ends);
    if (p.status !== "committed") {
      throw new ProtocolError(
        "invalid_proposal",
        `Cannot propose a cohort: the chain refused proposal ${p.proposal} (${p.code}: ${p.message})`,
      );
    }
    const documents = p.documents.retention + p.documents.fresh + p.documents.train;
    this.setup.say(`proposed ${p.proposal} data_root ${p.data_root}: ${documents} documents`);
    return { data_root: p.data_root, proposal: p.proposal, documents, status: p.status };
  }

  /**
   * The committed proposal of the curator's journal that the chain holds pending, or whose cohort it trains
   * (an earlier epoch's cohort is done training before that epoch is decided); null when there is none.
   */
  private async ownLiveProposal(curator: Curator): Promise<ProposalRecord | null> {
    const data = (await this.setup.chain.lifecycle()).data;
    const live = data?.proposal ?? (data?.cohort?.status === "training" ? data.cohort.proposal : null);
    if (live === null || live === undefined) return null;
    return curator.proposals().find((r) => r.proposal === live && r.status === "committed") ?? null;
  }

  /**
   * Where this epoch's collect of `rows` more rows of every source ends, by source name (journaled before any
   * collect: a controller killed between two sources' collects collects the same rows again, which the
   * Curator's journal already holds, never the rows after them).
   */
  async collectEnds(rows: number): Promise<Record<string, number>> {
    const curator = await this.curator();
    const ends: Record<string, number> = {};
    for (const s of curator.setup.config.sources) {
      ends[s.spec.name] = await curator.collectEnd(s.spec.name, rows);
    }
    return ends;
  }

  private async collectThenPropose(
    curator: Curator,
    input: { collect_rows: number; train_documents: number },
    ends: Record<string, number>,
  ): Promise<ProposalRecord> {
    for (const s of curator.setup.config.sources) {
      const name = s.spec.name;
      const end = ends[name];
      const r = end === undefined
        ? await curator.collect(name, input.collect_rows)
        : await curator.collectTo(name, end);
      this.setup.say(`collect ${name}: ${r.collected} collected, cursor ${r.cursor}`);
    }
    await this.untilProposable();
    return await curator.propose(input.train_documents);
  }

  /** Waits until no proposal is pending, no cohort is training and no evaluation is live. */
  private async untilProposable(): Promise<void> {
    let said = "";
    for (;;) {
      const lc = await this.setup.chain.lifecycle();
      const live = (await this.setup.chain.evaluation())?.live ?? null;
      const why = lc.data === null
        ? null
        : lc.data.proposal !== null
        ? `proposal ${lc.data.proposal} is pending`
        : lc.data.cohort?.status === "training"
        ? `cohort ${lc.data.cohort.data_root} is training`
        : live !== null
        ? "an evaluation is live"
        : null;
      if (why === null) return;
      if (why !== said) this.setup.say(`waiting to propose: ${why}`);
      said = why;
      await this.pause();
    }
  }

  /** Waits until proposal `proposal` activates cohort `dataRoot` (votes are the validators') or expires. */
  async awaitActivation(proposal: string, dataRoot: string): Promise<ActivationOutcome> {
    const { chain } = this.setup;
    let seen = -1;
    for (;;) {
      const p = await chain.dataProposal(proposal).catch(() => null);
      const state = p?.state as
        | { status: string; electorate: [string, number][]; votes: [string, boolean][] }
        | undefined;
      if (state !== undefined) {
        const total = state.electorate.reduce((n, [, w]) => n + w, 0);
        const yes = state.electorate.filter(([o]) => state.votes.some(([v, y]) => v === o && y))
          .reduce((n, [, w]) => n + w, 0);
        if (state.status === "expired") {
          return {
            activated: false,
            steps: 0,
            activated_height: null,
            yes_power: yes,
            total_power: total,
            replay_steps: 0,
          };
        }
        const lc = await chain.lifecycle();
        const cohort = lc.data?.cohort as
          | { data_root: string; activated: number; steps: number; schedule: { kind: string }[] }
          | null
          | undefined;
        if (state.status === "activated" && cohort && cohort.data_root === dataRoot) {
          const replay = cohort.schedule.filter((s) => s.kind === "replay").length;
          this.setup.say(`activated ${dataRoot} at height ${cohort.activated}: ${cohort.steps} steps`);
          return {
            activated: true,
            steps: cohort.steps,
            activated_height: cohort.activated,
            yes_power: yes,
            total_power: total,
            replay_steps: replay,
          };
        }
        if (yes !== seen) this.setup.say(`proposal ${proposal}: yes power ${yes} of ${total}`);
        seen = yes;
      }
      await this.pause();
    }
  }

  /**
   * Trains step `index` of epoch `epoch` with that epoch's Sponsor (its budget of `attempts`) until it
   * settles or the budget is spent; returns the attempts made for this step, in order.
   */
  async trainStep(epoch: number, index: number, attempts: number): Promise<StepAttempt[]> {
    const home = await this.home(`epoch-${epoch}/sponsor`);
    const { entries, clients } = await this.workers();
    const sponsor = await Sponsor.open({
      home,
      chain: this.setup.chain,
      workers: clients,
      entries,
      steps: index + 1,
      budget: attempts,
      pollMs: this.setup.config.poll_ms,
      emit: (e) => this.setup.say(`step ${index + 1} ${e.phase}`),
    });
    let exhausted = false;
    try {
      await sponsor.run();
    } catch (e) {
      if (!(e instanceof ProtocolError) || e.code !== "budget_exhausted") throw e;
      exhausted = true;
    }
    const all = sponsor.budget.attempts();
    // The attempts of this step: those after the index-th settled one, up to the next settled one.
    let settled = 0;
    const mine: Attempt[] = [];
    for (const a of all) {
      if (settled === index) mine.push(a);
      if (a.end?.outcome === "settled") settled++;
      if (settled > index) break;
    }
    const out = mine.map((a): StepAttempt => {
      const sub = sponsor.submitter.record(`reserve:${a.n}`);
      if (sub === null || a.end === null) {
        throw new ProtocolError("internal_error", `Cannot report attempt ${a.n}: it has no reserve or end`);
      }
      return {
        index,
        assignment_id: txid(envelopeOf(sub.raw) as never),
        outcome: a.end.outcome,
        claim_id: a.end.claim_id,
        loss: a.end.loss,
        reason: a.end.reason,
      };
    });
    if (!exhausted && out.at(-1)?.outcome !== "settled") {
      throw new ProtocolError("internal_error", `Cannot report step ${index}: the sponsor stopped early`);
    }
    return out;
  }

  /** Grows the learning model by `blocks` identity blocks for epoch `epoch` when the workers can hold it. */
  async grow(epoch: number, blocks: number): Promise<GrowthOutcome> {
    const { entries, clients } = await this.workers();
    const { home, chain, say, config } = this.setup;
    return await growIfRoom({
      chain,
      home,
      submitter: new Submitter(home.journal, chain.http, { confirmMs: 30_000, pollMs: 200 }),
      workers: clients,
      entries,
      blocks,
      epoch,
      say,
      pollMs: config.poll_ms,
    });
  }

  /** Opens (or finds) the evaluation of the trained cohort; its id. */
  async openEvaluation(): Promise<string> {
    return await (await this.evaluator()).open();
  }

  /** Scores evaluation `id` to its decision. */
  async decide(id: string): Promise<EvaluationOutcome> {
    const e = await (await this.evaluator()).decide(id);
    const d = e.decision as { promoted: boolean; reason: string; gate?: JsonObject };
    const lc = await this.setup.chain.lifecycle();
    return {
      evaluation_id: id,
      promoted: d.promoted,
      reason: d.reason,
      gate: d.gate ?? {},
      serving_root: lc.serving_root,
    };
  }

  /** How many score windows each group of evaluation `id` has settled (read from the chain). */
  async groups(id: string): Promise<Record<string, { settled: number; total: number }>> {
    const e = await this.setup.chain.evaluation(id);
    const g = (e?.groups ?? {}) as Record<string, { settled: number; total: number }>;
    return Object.fromEntries(
      GROUPS.map((k) => [k, { settled: g[k]?.settled ?? 0, total: g[k]?.total ?? 0 }]),
    );
  }

  private async evaluator(): Promise<Evaluator> {
    const { entries, clients } = await this.workers();
    return await Evaluator.open({
      home: await this.home("evaluator"),
      chain: this.setup.chain,
      workers: clients,
      entries,
      pollMs: this.setup.config.poll_ms,
      emit: (e) => this.setup.say(`evaluation ${e.event}: ${e.detail}`),
    });
  }

  private async pause(): Promise<void> {
    await new Promise((r) => setTimeout(r, this.setup.config.poll_ms));
  }
}
