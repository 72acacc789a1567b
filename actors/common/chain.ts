/**
 * What the actors read from a validator's RPC (PROTOCOL §13, shapes of `ledger/training/wire.ts`), and how
 * they sign training transactions: the body gets the account's next committed nonce at signing time, which
 * is safe because an actor signs a new intent only after its previous one settled (`submit.ts`).
 *
 * @example
 * ```ts
 * import { ChainClient } from "./chain.ts";
 * const chain = new ChainClient("http://127.0.0.1:26657");
 * const lc = await chain.lifecycle(); // {height, learning_root, training_round, assignment, claim, ...}
 * ```
 */
import { decodeCanonical, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Batch } from "../../kernels/batch.ts";
import { type Manifest, parseManifest } from "../../kernels/manifest.ts";
import { envelopeBytes, signBody, type TxBody } from "../../ledger/envelope.ts";
import type { AccountKey } from "../../ledger/keys.ts";
import type { ClaimAnswer, LifecycleAnswer, TrainingTxKind } from "../../ledger/training/wire.ts";
import type { INFERENCE_TX_FIELDS, JobAnswer, LiveJobsAnswer } from "../../ledger/inference/wire.ts";
import type { ConsumedAnswer, DataAnswer, DataTxKind, ProposalAnswer } from "../../ledger/data/wire.ts";
import type { EVALUATION_TX_FIELDS } from "../../ledger/evaluation/wire.ts";
import { TransportClient } from "../runtime/transport.ts";

/** A read-only client of one validator's RPC, plus transaction signing. */
export class ChainClient {
  readonly http: TransportClient;
  constructor(readonly url: string, timeoutMs = 10_000) {
    this.http = new TransportClient(url.replace(/\/$/, ""), null, { timeoutMs });
  }

  /** `/status`: chain id, height, app hash. */
  async status(): Promise<{ chain_id: string; height: number; app_hash: string }> {
    return await this.http.json("GET", "/status") as never;
  }

  /** `/vectors`: the conformance vectors the chain's genesis pins (PROTOCOL §10.6). */
  async vectors(): Promise<JsonValue> {
    return await this.http.json("GET", "/vectors");
  }

  /** `/account/<id>`: balance and next nonce. */
  async account(id: string): Promise<{ balance: number; nonce: number; height: number }> {
    return await this.http.json("GET", `/account/${id}`) as never;
  }

  /** `/lifecycle`. */
  async lifecycle(): Promise<LifecycleAnswer> {
    return await this.http.json("GET", "/lifecycle") as LifecycleAnswer;
  }

  /** `/manifest?root=`: a manifest the chain knows (genesis model, claimed candidates). */
  async manifest(root: string): Promise<Manifest> {
    return parseManifest(await this.http.json("GET", `/manifest?root=${root}`)).manifest;
  }

  /** `/batch?root=`: a genesis training batch. */
  async batch(root: string): Promise<Batch> {
    return await this.http.json("GET", `/batch?root=${root}`) as unknown as Batch;
  }

  /** `/claim?id=`: any claim ever made, with its metadata; null when unknown. */
  async claim(claimId: string): Promise<ClaimAnswer | null> {
    try {
      return await this.http.json("GET", `/claim?id=${claimId}`) as ClaimAnswer;
    } catch (e) {
      if (e instanceof ProtocolError && e.code === "not_found") return null;
      throw e;
    }
  }

  /** `/inference?id=`: a live job or a retained result with its last response's metadata; null when unknown. */
  async inference(jobId: string): Promise<JobAnswer | null> {
    return await this.#orNull(`/inference?id=${jobId}`) as JobAnswer | null;
  }

  /** `/inference?claim=`: the job a response (by its claim id) answers; null when unknown. */
  async inferenceOfClaim(claimId: string): Promise<JobAnswer | null> {
    return await this.#orNull(`/inference?claim=${claimId}`) as JobAnswer | null;
  }

  /** `/inference[?provider=]`: the codec's EOS id and the live jobs (of `provider` when given), no metadata. */
  async inferenceLive(provider?: string): Promise<LiveJobsAnswer> {
    return await this.http.json("GET", provider ? `/inference?provider=${provider}` : "/inference") as never;
  }

  /** `/data[?root=]`: an activated cohort (default the latest) with its scheduled batches; null when none. */
  async data(root?: string): Promise<DataAnswer | null> {
    return await this.#orNull(root ? `/data?root=${root}` : "/data") as DataAnswer | null;
  }

  /** `/data/proposal[?id=]`: a data proposal (default the pending one) with its document; null when none. */
  async dataProposal(proposalId?: string): Promise<ProposalAnswer | null> {
    return await this.#orNull(proposalId ? `/data/proposal?id=${proposalId}` : "/data/proposal") as
      | ProposalAnswer
      | null;
  }

  /** `/data/consumed`: whether a document id, a batch root or a source row was consumed, and by which cohort. */
  async consumed(
    what: { document: string } | { batch: string } | { source: string; row: number },
  ): Promise<ConsumedAnswer> {
    const query = "document" in what
      ? `document=${what.document}`
      : "batch" in what
      ? `batch=${what.batch}`
      : `source=${encodeURIComponent(what.source)}&row=${what.row}`;
    return await this.http.json("GET", `/data/consumed?${query}`) as ConsumedAnswer;
  }

  /** `/evaluation[?id=]`: the evaluation facts (serving model, live, recent), or one evaluation; null when unknown. */
  async evaluation(evaluationId?: string): Promise<JsonObject | null> {
    return await this.#orNull(evaluationId ? `/evaluation?id=${evaluationId}` : "/evaluation") as
      | JsonObject
      | null;
  }

  /** `/evaluation?score=`: a score claim with its state and metadata; null when unknown. */
  async score(claimId: string): Promise<JsonObject | null> {
    return await this.#orNull(`/evaluation?score=${claimId}`) as JsonObject | null;
  }

  async #orNull(path: string): Promise<JsonValue | null> {
    try {
      return await this.http.json("GET", path);
    } catch (e) {
      if (e instanceof ProtocolError && e.code === "not_found") return null;
      throw e;
    }
  }

  /** `/object/<root>`: sealed upload bytes, or null when not sealed. */
  async object(root: string): Promise<Uint8Array | null> {
    try {
      return await this.http.request("GET", `/object/${root}`);
    } catch (e) {
      if (e instanceof ProtocolError && e.code === "not_found") return null;
      throw e;
    }
  }

  /** `/block?height=`: a committed block (for scanning claims). */
  async block(height: number): Promise<JsonObject> {
    return await this.http.json("GET", `/block?height=${height}`) as JsonObject;
  }

  /** Signs a training, data or inference transaction of `kind` with `fields` at the account's next nonce; the exact bytes. */
  async sign(
    key: AccountKey,
    kind: TrainingTxKind | DataTxKind | keyof typeof INFERENCE_TX_FIELDS | keyof typeof EVALUATION_TX_FIELDS,
    fields: JsonObject,
  ): Promise<Uint8Array> {
    const [{ chain_id }, { nonce }] = await Promise.all([this.status(), this.account(key.accountId)]);
    const body = { ...fields, kind, chain_id, nonce } as TxBody;
    return envelopeBytes(signBody(body, key));
  }
}

/** The envelope inside journaled transaction bytes. */
export function envelopeOf(raw: Uint8Array): { body: JsonObject; public_key: string } {
  return decodeCanonical(raw) as unknown as { body: JsonObject; public_key: string };
}

/** A JSON value as a plain object (for the answers typed by wire.ts). */
export function asObject(v: JsonValue): JsonObject {
  return v as JsonObject;
}
