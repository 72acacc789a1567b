/**
 * What the Curator reads from its validator about data (PROTOCOL §6, §13): the current data root, the codec
 * root, each source's cursor, the pending proposal, and which document ids and batch roots earlier cohorts
 * consumed. Every answer is journaled by the caller (a `ctx.step`), so a re-executed operation sees what the
 * first execution saw.
 *
 * @example
 * ```ts
 * import { RpcCuratorChain } from "./chain_data.ts";
 * const chain = new RpcCuratorChain(new ChainClient("http://127.0.0.1:26657"));
 * const facts = await chain.facts(); // {height, data_root, tokenizer_root, cursors, proposal}
 * ```
 */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { ChainClient } from "../common/chain.ts";

/** The chain's data facts at one height. */
export interface ChainFacts extends JsonObject {
  height: number;
  data_root: string;
  tokenizer_root: string;
  cursors: Record<string, number>;
  /** The bounds the serving model puts on batches. */
  config: { vocab_size: number; max_position_embeddings: number };
  /** The pending proposal's id, or null. */
  proposal: string | null;
  /** Retention and fresh documents a cohort must carry (absent in facts journaled before the node said: 32). */
  evaluation_documents?: number;
}

/** Which of the asked ids and roots were consumed. */
export interface ConsumedAnswer extends JsonObject {
  documents: string[];
  batches: string[];
}

/** The curator's view of the chain. */
export interface CuratorChain {
  readonly client: ChainClient;
  facts(): Promise<ChainFacts>;
  consumedAmong(documents: readonly string[], batches: readonly string[]): Promise<ConsumedAnswer>;
  /** A proposal and its document, or null when the chain does not know it. */
  proposal(id: string): Promise<ProposalView | null>;
}

/** A proposal as the chain holds it. */
export interface ProposalView extends JsonObject {
  id: string;
  status: string;
  data_root: string;
  /** The cohort document. */
  document: JsonObject;
}

/** The data part of `/lifecycle` (`ledger/data/wire.ts`). */
interface DataPart {
  data_root: string;
  cursors: Record<string, number>;
  /** Absent on a node from before the count was a genesis field (32). */
  evaluation_documents?: number;
  proposal: string | null;
  cohort: { data_root: string; proposal: string } | null;
}

/** The curator's view over a validator's RPC. */
export class RpcCuratorChain implements CuratorChain {
  /** Consumed sets by data root: a data root's history never changes, so a walk is done once per root. */
  private walked: { root: string; documents: Set<string>; batches: Set<string> } | null = null;

  constructor(readonly client: ChainClient) {}

  private async data(): Promise<DataPart> {
    const lc = await this.client.lifecycle() as unknown as { data?: DataPart | null };
    if (!lc.data) {
      throw new ProtocolError(
        "invalid_transition",
        `Cannot curate data for ${this.client.url}: its genesis has no data lifecycle`,
      );
    }
    return lc.data;
  }

  /** The pending proposal's id, or null (one `/lifecycle` read: what a watcher polls). */
  async pendingProposal(): Promise<string | null> {
    return (await this.data()).proposal;
  }

  async facts(): Promise<ChainFacts> {
    const [data, candidate, status] = await Promise.all([
      this.data(),
      this.client.http.json("GET", "/candidate") as Promise<
        { manifest: { config: JsonObject; tokenizer_root: string } }
      >,
      this.client.status(),
    ]);
    const config = candidate.manifest.config;
    return {
      height: status.height,
      data_root: data.data_root,
      tokenizer_root: candidate.manifest.tokenizer_root,
      cursors: { ...data.cursors },
      config: {
        vocab_size: Number(config.vocab_size),
        max_position_embeddings: Number(config.max_position_embeddings),
      },
      proposal: data.proposal,
      ...(typeof data.evaluation_documents === "number"
        ? { evaluation_documents: data.evaluation_documents }
        : {}),
    };
  }

  async consumedAmong(documents: readonly string[], batches: readonly string[]): Promise<ConsumedAnswer> {
    const root = (await this.data()).data_root;
    if (this.walked?.root !== root) this.walked = { root, ...(await this.walk(root)) };
    const w = this.walked;
    return {
      documents: [...new Set(documents)].filter((d) => w.documents.has(d)).sort(),
      batches: [...new Set(batches)].filter((b) => w.batches.has(b)).sort(),
    };
  }

  /** Every id and batch root of the activated cohorts from `root` back to the genesis data root. */
  private async walk(root: string): Promise<{ documents: Set<string>; batches: Set<string> }> {
    const documents = new Set<string>();
    const batches = new Set<string>();
    for (let at: string | null = root; at !== null;) {
      const cohort = await this.optional(`/data?root=${at}`) as { proposal: string } | null;
      if (cohort === null) break; // the genesis data root: nothing before it
      const p = await this.optional(`/data/proposal?id=${cohort.proposal}`) as
        | { document: { previous: string; documents: { id: string; batches: string[] }[] } }
        | null;
      if (p === null) break;
      for (const d of p.document.documents) {
        documents.add(d.id);
        for (const b of d.batches) batches.add(b);
      }
      at = p.document.previous;
    }
    return { documents, batches };
  }

  async proposal(id: string): Promise<ProposalView | null> {
    const p = await this.optional(`/data/proposal?id=${id}`) as
      | { proposal_id: string; state: { status: string; data_root: string }; document: JsonObject }
      | null;
    if (p === null) return null;
    return { id: p.proposal_id, status: p.state.status, data_root: p.state.data_root, document: p.document };
  }

  private async optional(path: string): Promise<JsonValue | null> {
    try {
      return await this.client.http.json("GET", path);
    } catch (e) {
      if (e instanceof ProtocolError && e.code === "not_found") return null;
      throw e;
    }
  }
}
