/**
 * A validator operator's auto-review (ARCHITECTURE "Actors", Validator): run beside the node by
 * `deno task validator … --review-policy FILE`, it watches the node's pending proposal, reviews every new
 * one with the Curator's review from the operator's own copy of the raw files (`review_on_chain.ts`), and
 * signs `vote_data {proposal_id, approve: true}` with the owner's account key (`HOME/account.key`) **only**
 * when the verdict is `approve`; a rejected proposal gets no vote at all.
 *
 * Each review is a durable operation (`review/<proposal>`) in `HOME/reviewer/journal.sqlite`: the report is
 * journaled before the vote is signed, and the vote goes through the journaled `Submitter`, so a restarted
 * node neither reviews a proposal again (its verdict cannot flip) nor votes twice.
 *
 * The policy file is `{"sources": "sources.json", "poll_ms"?: 1000}` (`sources` relative to the policy file).
 *
 * @example
 * ```ts
 * import { AutoReviewer } from "./auto_review.ts";
 * const reviewer = await AutoReviewer.start({ home, rpc: node.url, policyPath, say: console.log });
 * // ...
 * await reviewer.stop();
 * ```
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { ObjectStore } from "../../core/object_store.ts";
import { loadKeyFile } from "../../ledger/keys.ts";
import { loadCodec, type TextCodec } from "../../text/codec.ts";
import { ChainClient } from "../common/chain.ts";
import { defineActor, DurableActor, type OperationContext } from "../runtime/durable.ts";
import { Journal, operationId } from "../runtime/journal.ts";
import { Submitter } from "../runtime/submit.ts";
import { RpcCuratorChain } from "./chain_data.ts";
import { loadSourcesFile, type SourcesConfig } from "./config.ts";
import { SourceReader } from "./reader.ts";
import type { ReviewReport } from "./review.ts";
import { reviewOnChain } from "./review_on_chain.ts";

/** What starting the auto-review needs. */
export interface AutoReviewOptions {
  /** The validator's home: `account.key` (the owner's key) and `objects/` (the codec). */
  readonly home: string;
  /** The node's own RPC URL. */
  readonly rpc: string;
  readonly policyPath: string;
  readonly say: (line: string) => void;
}

/** What one review operation recorded. */
export interface ReviewOutcome extends JsonObject {
  report: ReviewReport;
  /** The vote's submission, or null when the review rejected the proposal. */
  vote: { hash: string; status: string; height: number | null; code: string | null } | null;
}

/** Reads the policy file: the sources file and the poll interval. */
export async function loadReviewPolicy(path: string): Promise<{ config: SourcesConfig; pollMs: number }> {
  let value: { sources?: unknown; poll_ms?: unknown };
  try {
    value = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new ProtocolError("invalid_value", `Cannot read review policy ${path}: ${(e as Error).message}`);
  }
  const keys = Object.keys(value ?? {});
  if (typeof value?.sources !== "string" || keys.some((k) => k !== "sources" && k !== "poll_ms")) {
    throw new ProtocolError(
      "invalid_value",
      `Cannot read review policy ${path}: expected {sources, poll_ms?}`,
    );
  }
  const poll = value.poll_ms ?? 1_000;
  if (typeof poll !== "number" || !Number.isSafeInteger(poll) || poll < 50 || poll > 60_000) {
    throw new ProtocolError(
      "invalid_value",
      `Cannot read review policy ${path}: poll_ms is ${poll}, expected 50-60000`,
    );
  }
  const sources = isAbsolute(value.sources) ? value.sources : resolve(dirname(path), value.sources);
  return { config: await loadSourcesFile(sources), pollMs: poll };
}

/** A running auto-review loop. */
export class AutoReviewer {
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly reader = new SourceReader();
  private codecs = new Map<string, TextCodec>();

  private constructor(
    private readonly options: AutoReviewOptions,
    private readonly chain: RpcCuratorChain,
    private readonly config: SourcesConfig,
    private readonly pollMs: number,
    private readonly journal: Journal,
    private readonly submitter: Submitter,
    private readonly key: Awaited<ReturnType<typeof loadKeyFile>>,
    private actor: DurableActor,
  ) {}

  /** Opens the reviewer's journal (finishing an interrupted review) and starts watching. */
  static async start(options: AutoReviewOptions): Promise<AutoReviewer> {
    const { config, pollMs } = await loadReviewPolicy(options.policyPath);
    const key = await loadKeyFile(`${options.home}/account.key`);
    await Deno.mkdir(`${options.home}/reviewer`, { recursive: true });
    const journal = Journal.open(`${options.home}/reviewer/journal.sqlite`);
    const chain = new RpcCuratorChain(new ChainClient(options.rpc));
    const submitter = new Submitter(journal, chain.client.http, { confirmMs: 30_000, pollMs: 200 });
    const r = new AutoReviewer(options, chain, config, pollMs, journal, submitter, key, null as never);
    r.actor = await DurableActor.open(journal, r.definition(), { recover: false });
    r.loop = r.run();
    return r;
  }

  /** Every finished review, oldest first. */
  outcomes(): ReviewOutcome[] {
    return this.journal.operations().filter((op) => op.handler === "review" && op.result !== null)
      .map((op) => decodeCanonical(op.result!) as { ok: boolean; value?: ReviewOutcome })
      .filter((r) => r.ok).map((r) => r.value!);
  }

  /** Stops watching (after the review in progress, if any) and closes the journal. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    this.journal.close();
  }

  private async run(): Promise<void> {
    let recovered = false;
    while (!this.stopped) {
      try {
        if (!recovered) {
          for (const r of await this.actor.recover()) if (!r.ok) throw r.error;
          recovered = true;
        }
        const pending = await this.chain.pendingProposal();
        if (pending !== null) {
          const op = operationId("review", { proposal: pending });
          const bytes = await this.actor.deliver("review", op, { proposal: pending });
          const r = decodeCanonical(bytes) as { ok: boolean; value?: ReviewOutcome; message?: string };
          if (r.ok) this.announce(r.value!);
        }
      } catch (e) {
        this.options.say(`review: waiting: ${(e as Error).message}`);
      }
      const until = Date.now() + this.pollMs;
      while (!this.stopped && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    }
  }

  private readonly announced = new Set<string>();

  private announce(o: ReviewOutcome): void {
    if (this.announced.has(o.report.proposal)) return;
    this.announced.add(o.report.proposal);
    const reasons = o.report.reasons.map((x) => `${x.document ?? "cohort"}: ${x.code}: ${x.message}`);
    this.options.say(
      `review ${o.report.proposal} ${o.report.verdict}${
        o.vote === null ? ", no vote" : `, vote ${o.vote.status}${o.vote.code ? ` (${o.vote.code})` : ""}`
      }${reasons.length ? `: ${reasons.slice(0, 3).join("; ")}` : ""}`,
    );
  }

  private async codec(root: string): Promise<TextCodec> {
    const found = this.codecs.get(root);
    if (found) return found;
    const codec = await loadCodec(new ObjectStore(`${this.options.home}/objects`), root);
    this.codecs = new Map([[root, codec]]);
    return codec;
  }

  private definition() {
    return defineActor({
      name: "reviewer",
      machines: [],
      handlers: {
        review: (ctx, input) => this.review(ctx, (input as { proposal: string }).proposal),
      },
    });
  }

  private async review(ctx: OperationContext, proposal: string): Promise<JsonValue> {
    const report = await ctx.step("report", () =>
      reviewOnChain({
        chain: this.chain,
        config: this.config,
        codec: (root) => this.codec(root),
        reader: this.reader,
      }, proposal));
    if (report.verdict !== "approve") return { report, vote: null } satisfies ReviewOutcome;
    let sub;
    for (;;) {
      sub = await this.submitter.submit(
        ctx.opId,
        () =>
          this.chain.client.sign(this.key, "vote_data" as never, { proposal_id: proposal, approve: true }),
      );
      if (sub.status === "committed" || sub.status === "rejected") break;
      await new Promise((r) => setTimeout(r, 500));
    }
    return {
      report,
      vote: { hash: sub.hash, status: sub.status, height: sub.height, code: sub.code },
    } satisfies ReviewOutcome;
  }
}
