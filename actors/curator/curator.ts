/**
 * The Curator actor (ARCHITECTURE "Actors", PROTOCOL §6, §11): collects documents from pinned sources into
 * its corpus registry with durable cursors and deduplication, and proposes cohorts built from them.
 *
 * Both writers are durable operations (`../runtime/durable.ts`) with content-derived ids:
 * - `collect {source, start, end}` (id `collect/<source>/<start>`): reads the rows from the curator's copy of
 *   the source (its SHA-256 checked first), asks the chain which of their ids were consumed (a journaled
 *   step), screens them (`screen.ts`), stores the kept rows' raw objects and returns the tranche. The result
 *   is committed before the operation answers, and the cursor is derived from committed tranches
 *   (`corpus.ts`), so a tranche is journaled before the cursor advances, and a crash before the commit
 *   re-executes the same tranche on restart with the same journaled answers.
 * - `propose {previous, attempt}` (id `propose/<previous>/<attempt>`): journals the chain's data facts and
 *   which candidates were consumed, builds the cohort (`build.ts`), stores the document and every batch in
 *   the object store, and submits `propose_data` through the lost-acknowledgement-safe `Submitter` under the
 *   operation's intent, so a restarted curator resends the journaled bytes and never signs a second
 *   proposal for the same chain state. Only a proposal the chain refused, or one that expired unapproved,
 *   lets a later `propose` make a new attempt.
 *
 * @example
 * ```ts
 * import { Curator } from "./curator.ts";
 * // const curator = await Curator.open({ home, config, chain });
 * // const tranche = await curator.collect("devnet-train", 256);
 * // const proposal = await curator.propose(128);
 * ```
 */
import { canonicalBytes, decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { sha256Hex } from "../../core/digest.ts";
import { txid } from "../../ledger/envelope.ts";
import { loadCodec, type TextCodec } from "../../text/codec.ts";
import { rowDocument } from "../../text/sources/document.ts";
import type { PinnedSource } from "../../text/sources/source.ts";
import type { ChatMessage } from "../../text/template_render.ts";
import { envelopeOf } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import { defineActor, DurableActor, type OperationContext } from "../runtime/durable.ts";
import { operationId } from "../runtime/journal.ts";
import { Submitter } from "../runtime/submit.ts";
import { buildCohort } from "./build.ts";
import type { ReviewReport } from "./review.ts";
import { reviewOnChain } from "./review_on_chain.ts";
import { consumedIndex } from "./consumed.ts";
import { SourceReader } from "./reader.ts";
import type { ChainFacts, CuratorChain } from "./chain_data.ts";
import type { CuratorSource, SourcesConfig } from "./config.ts";
import { type Collected, readCorpus, type Tranche } from "./corpus.ts";
import { screenTranche, usableRow } from "./screen.ts";
import { documentBatches } from "./windows.ts";

/** What a curator runs with. */
export interface CuratorSetup {
  readonly home: Home;
  readonly config: SourcesConfig;
  readonly chain: CuratorChain;
  /** How long the submitter waits for a confirmation (default 30 s). */
  readonly confirmMs?: number;
}

/** The outcome of a `propose` operation. */
export interface ProposalRecord extends JsonObject {
  /** The curator's account (the proposer). */
  proposer: string;
  previous: string;
  attempt: number;
  data_root: string;
  proposal: string;
  hash: string;
  status: string;
  height: number | null;
  code: string | null;
  message: string | null;
  documents: { retention: number; fresh: number; train: number };
  windows: { source: string; start: number; end: number }[];
}

/** A collect tranche as `collect --json` reports it. */
export interface CollectReport extends JsonObject {
  collected: number;
  duplicates: number;
  near_duplicates: number;
  cursor: number;
}

/** A running curator over one home. */
export class Curator {
  private readonly reader = new SourceReader();
  /** A `propose` a crash left unfinished and `open` finished: the next `propose` answers with it. */
  private recoveredProposal: string | null = null;
  private codecs = new Map<string, TextCodec>();

  private constructor(
    readonly setup: CuratorSetup,
    readonly submitter: Submitter,
    public actor: DurableActor,
  ) {}

  /** Opens the journal and finishes any operation a crash left unfinished. */
  static async open(setup: CuratorSetup): Promise<Curator> {
    const submitter = new Submitter(setup.home.journal, setup.chain.client.http, {
      confirmMs: setup.confirmMs ?? 30_000,
      pollMs: 200,
    });
    const curator = new Curator(setup, submitter, null as unknown as DurableActor);
    curator.actor = await DurableActor.open(setup.home.journal, curator.definition(), { recover: false });
    for (const r of await curator.actor.recover()) {
      if (!r.ok) throw r.error;
      if (setup.home.journal.operation(r.opId)?.handler === "propose") curator.recoveredProposal = r.opId;
    }
    return curator;
  }

  /** True when `open` finished a `propose` a crash left unfinished (the next `propose` answers with it). */
  get hasRecoveredProposal(): boolean {
    return this.recoveredProposal !== null;
  }

  /** The corpus registry as the journal holds it now. */
  corpus() {
    return readCorpus(this.setup.home.journal);
  }

  /** Every recorded proposal, oldest first. */
  proposals(): ProposalRecord[] {
    return this.setup.home.journal.operations().filter((op) => op.handler === "propose" && op.result !== null)
      .map((op) => decodeCanonical(op.result!) as { ok: boolean; value?: ProposalRecord })
      .filter((r) => r.ok).map((r) => r.value!);
  }

  /** Collects the next `rows` rows of `source` after its cursor (and the chain's); the tranche's counts. */
  async collect(source: string, rows: number): Promise<CollectReport & { source: string; start: number }> {
    return await this.collectTo(source, await this.collectEnd(source, rows));
  }

  /**
   * Where a collect of the next `rows` rows of `source` after its cursor (and the chain's) ends, capped by
   * the source's row count. A caller that journals it and then collects `collectTo` that end reads the same
   * rows when it runs again after a crash, not the rows after those a first run already collected.
   */
  async collectEnd(source: string, rows: number): Promise<number> {
    const pinned = await this.pinned(this.source(source));
    const facts = await this.setup.chain.facts();
    const start = Math.max(this.corpus().cursor(source), facts.cursors[source] ?? 0);
    return Math.min(pinned.count, start + rows);
  }

  /**
   * Collects the rows of `source` from its cursor (and the chain's) up to row `end` (exclusive); nothing when
   * the cursor is there already. The tranche's counts.
   */
  async collectTo(source: string, end: number): Promise<CollectReport & { source: string; start: number }> {
    const pinned = await this.pinned(this.source(source));
    const facts = await this.setup.chain.facts();
    const start = Math.max(this.corpus().cursor(source), facts.cursors[source] ?? 0);
    end = Math.min(pinned.count, end);
    if (end <= start) {
      return { source, start, collected: 0, duplicates: 0, near_duplicates: 0, cursor: start };
    }
    const input = { source, start, end };
    const tranche = this.unwrap<Tranche>(
      await this.actor.deliver("collect", operationId("collect", { source, start }), input),
    );
    const n = (reason: string) => tranche.dropped.filter((d) => d.reason === reason).length;
    return {
      source,
      start,
      collected: tranche.kept.length,
      duplicates: n("duplicate") + n("consumed"),
      near_duplicates: n("near_duplicate"),
      cursor: tranche.end,
    };
  }

  /** Builds and proposes a cohort with at most `train` train documents; the recorded proposal. */
  async propose(train: number): Promise<ProposalRecord> {
    if (this.recoveredProposal !== null) {
      // The interrupted run's proposal, finished on open: the command it was part of is done.
      const op = this.setup.home.journal.operation(this.recoveredProposal)!;
      this.recoveredProposal = null;
      return this.unwrap<ProposalRecord>(op.result!);
    }
    const facts = await this.setup.chain.facts();
    const previous = facts.data_root;
    // A proposal the chain refused, or one that expired unapproved, lets the next attempt go ahead.
    let attempt = 0;
    for (const p of this.proposals().filter((x) => x.previous === previous)) {
      if (p.attempt !== attempt) continue;
      const done = p.status === "rejected" ||
        (await this.setup.chain.proposal(p.proposal))?.status === "expired";
      if (!done) break;
      attempt++;
    }
    const opId = operationId("propose", { previous, attempt });
    const recorded = this.setup.home.journal.operation(opId);
    if (recorded === null && facts.proposal !== null) {
      throw new ProtocolError(
        "busy",
        `Cannot propose data: proposal ${facts.proposal} is pending on the chain`,
      );
    }
    // A recorded attempt answers with what it recorded, whatever --train says now.
    const input = recorded?.input ? decodeCanonical(recorded.input) : { previous, attempt, train };
    return this.unwrap<ProposalRecord>(await this.actor.deliver("propose", opId, input));
  }

  /**
   * Reviews proposal `proposalId` from this curator's own copy of the raw files against its node's state
   * (`review_on_chain.ts`); reads only, journals nothing.
   */
  review(proposalId: string): Promise<ReviewReport> {
    const { chain, config } = this.setup;
    return reviewOnChain(
      { chain, config, codec: (root) => this.codec(root), reader: this.reader },
      proposalId,
    );
  }

  private unwrap<T>(bytes: Uint8Array): T {
    const r = decodeCanonical(bytes) as { ok: boolean; value?: T; code?: string; message?: string };
    if (!r.ok) throw new ProtocolError(r.code as never, r.message ?? "");
    return r.value!;
  }

  private source(name: string): CuratorSource {
    const s = this.setup.config.sources.find((x) => x.spec.name === name);
    if (s === undefined) {
      throw new ProtocolError(
        "invalid_source",
        `Cannot use source ${name}: the sources file lists ${
          this.setup.config.sources.map((x) => x.spec.name).join(", ")
        }`,
      );
    }
    return s;
  }

  private pinned(s: CuratorSource): Promise<PinnedSource> {
    return this.reader.open(s);
  }

  /** The codec whose root the chain pins (from the home's object store). */
  async codec(root: string): Promise<TextCodec> {
    const found = this.codecs.get(root);
    if (found) return found;
    const codec = await loadCodec(this.setup.home.store, root);
    this.codecs = new Map([[root, codec]]);
    return codec;
  }

  private async rawMessages(doc: Collected): Promise<ChatMessage[]> {
    const value = decodeCanonical(await this.setup.home.store.get(doc.object)) as unknown as {
      messages: ChatMessage[];
    };
    return value.messages;
  }

  private definition() {
    return defineActor({
      name: "curator",
      machines: [],
      handlers: {
        collect: (ctx, input) =>
          this.collectTranche(ctx, input as { source: string; start: number; end: number }),
        propose: (ctx, input) =>
          this.proposeCohort(ctx, input as { previous: string; attempt: number; train: number }),
      },
    });
  }

  private async collectTranche(
    ctx: OperationContext,
    input: { source: string; start: number; end: number },
  ): Promise<JsonValue> {
    const src = this.source(input.source);
    const rows = await (await this.pinned(src)).read(input.start, input.end);
    const facts = await ctx.step("facts", () => this.setup.chain.facts());
    const codec = await this.codec(facts.tokenizer_root);
    const ids = rows.map((m) => rowDocument(m).id);
    const consumed = await ctx.step("consumed", () => this.setup.chain.consumedAmong(ids, []));
    const usable = usableRow(codec, this.setup.config.windows, this.setup.config.minTargets);
    const { tranche, objects } = screenTranche({
      source: input.source,
      start: input.start,
      rows,
      corpus: readCorpus(this.setup.home.journal),
      consumed: new Set(consumed.documents),
      usable,
    });
    await this.setup.home.store.putMany(objects);
    return tranche;
  }

  private async proposeCohort(
    ctx: OperationContext,
    input: { previous: string; attempt: number; train: number },
  ): Promise<JsonValue> {
    const facts = await ctx.step("facts", () => this.setup.chain.facts());
    if (facts.data_root !== input.previous) {
      throw new ProtocolError(
        "invalid_proposal",
        `Cannot propose data: the chain's data root is ${facts.data_root}, expected ${input.previous}`,
      );
    }
    const codec = await this.codec(facts.tokenizer_root);
    const corpus = readCorpus(this.setup.home.journal);
    const messages = new Map<string, ChatMessage[]>();
    for (const d of corpus.documents) {
      if (d.row >= (facts.cursors[d.source] ?? 0)) messages.set(d.object, await this.rawMessages(d));
    }
    // Which candidate ids and batch roots the chain consumed, asked once and journaled.
    const candidates = corpus.documents.filter((d) => messages.has(d.object));
    const roots: string[] = [];
    for (const d of candidates) {
      try {
        roots.push(
          ...documentBatches(codec, messages.get(d.object)!, this.setup.config.windows, false).roots,
        );
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e;
      }
    }
    const consumed = await ctx.step(
      "consumed",
      () => this.setup.chain.consumedAmong(candidates.map((d) => d.id), roots),
    );
    const built = buildCohort({
      corpus,
      sources: this.setup.config.sources,
      facts: { ...facts, consumed: consumedIndex(consumed) },
      codec,
      windows: this.setup.config.windows,
      train: input.train,
      messages: (d) => messages.get(d.object)!,
    });
    const store = this.setup.home.store;
    await store.putMany([
      [built.root, canonicalBytes(built.document)],
      ...built.batches.map((b) => {
        const bytes = canonicalBytes(b);
        return [sha256Hex(bytes), bytes] as const;
      }),
    ]);
    const { home, chain } = this.setup;
    const sub = await this.submitter.submit(
      ctx.opId,
      () =>
        chain.client.sign(home.key, "propose_data" as never, {
          data_root: built.root,
          metadata: built.metadata,
        }),
    );
    const count = (role: string) => built.document.documents.filter((d) => d.role === role).length;
    return {
      proposer: home.key.accountId,
      previous: input.previous,
      attempt: input.attempt,
      data_root: built.root,
      proposal: txid(envelopeOf(sub.raw) as never),
      hash: sub.hash,
      status: sub.status,
      height: sub.height,
      code: sub.code,
      message: sub.message,
      documents: { retention: count("retention"), fresh: count("fresh"), train: count("train") },
      windows: built.document.windows,
    } satisfies ProposalRecord;
  }
}

export type { ChainFacts };
