/**
 * Publishing the objects a challenge needs (PROTOCOL §5 `upload`, `seal`), and submitting a batch of
 * transactions in one go. Each needed root not yet sealed is uploaded in 1 MiB chunks from the first chunk
 * the ledger does not have, then sealed; a fraud challenger appends its `resolve`.
 *
 * A dispute is a race against `availability_blocks`, so the batch is pipelined: every transaction is signed
 * up front with consecutive nonces (from the account's committed nonce), journaled and broadcast in order
 * (the proposer admits each against the state projected by the ones before it), and only then confirmed.
 * Every transaction goes through the lost-acknowledgement-safe submitter under an intent derived from the
 * claim, the challenge, the root and the chunk index, so a restarted publisher first settles what it had
 * signed, with the same bytes, and signs only what was never signed. A transaction the chain refused changed
 * nothing; it is retried as a new intent (`retry: k`) on the next call.
 *
 * @example
 * ```ts
 * import { publishNeeded } from "./publish.ts";
 * // await publishNeeded({ chain, submitter, key, claimId, challenge, fetch: (root) => store.get(root) });
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import { envelopeBytes, signBody, type TxBody } from "../../ledger/envelope.ts";
import type { AccountKey } from "../../ledger/keys.ts";
import { type TrainingTxKind, uploadChunks, uploadPaths } from "../../ledger/training/wire.ts";
import type { StageTrace } from "../../kernels/trace.ts";
import { committedChunkRoot } from "../../kernels/trace_chunks.ts";
import { type Submission, Submitter } from "../runtime/submit.ts";
import type { ChainClient } from "./chain.ts";

/** The parts of a live challenge the publisher reads. */
export interface ChallengeView {
  readonly owner: string;
  readonly kind: string;
  readonly stage: number;
  readonly needed: readonly string[];
  readonly uploads: readonly { object_root: string; chunks: number }[];
  readonly sealed: readonly string[];
}

/** One transaction of a batch: what it is for (its base intent), its kind and fields, and a label. */
export interface TxSpec {
  readonly base: JsonObject;
  /** The intent itself, when the caller names it (else the first unrefused retry of `base`). */
  readonly intent?: string;
  readonly kind: TrainingTxKind | "score";
  readonly fields: JsonObject;
  readonly what: string;
}

/** Submits `intent` until the chain decides it (an unknown outcome is resumed with the same bytes). */
export async function submitSettled(
  submitter: Submitter,
  intent: string,
  sign: () => Promise<Uint8Array>,
  pauseMs = 500,
): Promise<Submission> {
  for (;;) {
    try {
      const s = await submitter.submit(intent, sign);
      if (s.status === "committed" || s.status === "rejected") return s;
    } catch (e) {
      if (!(e instanceof RetryableError)) throw e;
    }
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

/** The intent of `base`: the first retry whose record is missing or was not refused. */
export function intentOf(submitter: Submitter, base: JsonObject): string {
  for (let retry = 0;; retry++) {
    const intent = id(retry === 0 ? base : { ...base, retry });
    if (submitter.record(intent)?.status !== "rejected") return intent;
  }
}

function never(): Promise<Uint8Array> {
  return Promise.reject(new ProtocolError("internal_error", "Cannot re-sign a journaled transaction"));
}

/**
 * Submits the batch pipelined (see the module comment) and returns each transaction's settled submission,
 * in order. Stops at the first refusal (the rest are left for the next call).
 */
export async function submitBatch(
  chain: ChainClient,
  submitter: Submitter,
  key: AccountKey,
  txs: readonly TxSpec[],
  onTx?: (what: string, s: Submission) => void,
): Promise<Submission[]> {
  const intents = txs.map((t) => t.intent ?? intentOf(submitter, t.base));
  // Whatever was signed before (by this or an earlier process) holds nonces: settle it first, same bytes.
  for (const intent of intents) {
    const r = submitter.record(intent);
    if (r !== null && r.status !== "committed" && r.status !== "rejected") {
      await submitSettled(submitter, intent, never);
    }
  }
  const fresh = intents.map((intent, i) => ({ intent, t: txs[i]! })).filter((x) =>
    submitter.record(x.intent) === null
  );
  if (fresh.length > 0) {
    const [{ chain_id }, { nonce }] = await Promise.all([chain.status(), chain.account(key.accountId)]);
    const send = new Submitter(submitter.journal, submitter.rpc, { confirmMs: 0, pollMs: 0 });
    for (const [k, { intent, t }] of fresh.entries()) {
      const body = { ...t.fields, kind: t.kind, chain_id, nonce: nonce + k } as TxBody;
      const bytes = envelopeBytes(signBody(body, key));
      const s = await send.submit(intent, () => bytes).catch((e) => {
        if (e instanceof RetryableError) return null; // journaled; confirmed below
        throw e;
      });
      if (s?.status === "rejected") break; // the later nonces cannot apply now; left unsigned
    }
  }
  const out: Submission[] = [];
  for (const [i, intent] of intents.entries()) {
    if (submitter.record(intent) === null) break;
    const s = await submitSettled(submitter, intent, never);
    onTx?.(txs[i]!.what, s);
    out.push(s);
    if (s.status === "rejected") break;
  }
  return out;
}

/** The upload and seal transactions that publish every needed object not yet sealed. */
export async function publishTxs(
  claimId: string,
  challenge: ChallengeView,
  fetch: (root: string) => Promise<Uint8Array | null>,
  committed: (root: string) => boolean = () => false,
): Promise<TxSpec[]> {
  const tag = { claim: claimId, owner: challenge.owner, kind: challenge.kind, stage: challenge.stage };
  const txs: TxSpec[] = [];
  for (const root of challenge.needed) {
    if (challenge.sealed.includes(root)) continue;
    const bytes = await fetch(root);
    if (bytes === null) {
      throw new ProtocolError(
        "object_not_found",
        `Cannot publish ${root} for claim ${claimId}: no source holds it`,
      );
    }
    const chunks = uploadChunks(bytes);
    const paths = uploadPaths(bytes, committed(root));
    const have = challenge.uploads.find((u) => u.object_root === root)?.chunks ?? 0;
    for (let index = have; index < chunks.length; index++) {
      txs.push({
        base: { ...tag, tx: "upload", root, index },
        kind: "upload",
        fields: { claim_id: claimId, object_root: root, index, data: chunks[index]!, path: paths[index]! },
        what: `upload ${root.slice(0, 12)} ${index + 1}/${chunks.length}`,
      });
    }
    txs.push({
      base: { ...tag, tx: "seal", root },
      kind: "seal",
      fields: { claim_id: claimId, object_root: root },
      what: `seal ${root.slice(0, 12)}`,
    });
  }
  return txs;
}

/**
 * For a training claim's `traces` and a challenge of `phase`: whether an object's chunks carry paths at
 * `upload` (the traces commit its chunk root and the challenge is not `chunks`, PROTOCOL §5).
 */
export function claimChunkTree(
  traces: readonly StageTrace[],
  phase: string | null,
): (root: string) => boolean {
  return (root) => phase !== "chunks" && committedChunkRoot(traces, root) !== null;
}

/**
 * `claimChunkTree` from a claim as the chain answers it (`/claim?id=`): a training step's traces from its
 * metadata; any other claim (a growth) commits no chunk roots.
 */
export function answerChunkTree(
  answer: { readonly state: JsonObject; readonly metadata: JsonObject },
  phase: string | null,
): (root: string) => boolean {
  const recordRoot = (answer.state as { work?: { record_root?: string } }).work?.record_root;
  const record = recordRoot === undefined ? undefined : answer.metadata[recordRoot] as { traces?: unknown };
  if (!record || !Array.isArray(record.traces)) return () => false;
  const traces = record.traces.map((r) => answer.metadata[r as string] as unknown as StageTrace);
  return claimChunkTree(traces, phase);
}

/** Uploads and seals every needed object not yet sealed (plus `extra` after them); the submissions. */
export async function publishNeeded(input: {
  chain: ChainClient;
  submitter: Submitter;
  key: AccountKey;
  claimId: string;
  challenge: ChallengeView;
  fetch: (root: string) => Promise<Uint8Array | null>;
  /**
   * Whether the claim commits the chunk root of `root` for this challenge (`claimChunkTree`), so its chunks
   * carry their Merkle paths; none by default (responses, scores, growths).
   */
  committed?: (root: string) => boolean;
  extra?: readonly TxSpec[];
  onTx?: (what: string, s: Submission) => void;
  /**
   * Told the uploaded bytes so far, the bytes this call uploads in all and the milliseconds since the first
   * transaction was sent (fetching the objects before it is not counted), after each committed chunk.
   */
  onUpload?: (done: number, total: number, elapsedMs: number) => void;
}): Promise<Submission[]> {
  const txs = [
    ...await publishTxs(input.claimId, input.challenge, input.fetch, input.committed),
    ...(input.extra ?? []),
  ];
  const bytes = new Map(
    txs.filter((t) => t.kind === "upload").map((t) => [t.what, chunkBytes(t.fields.data)]),
  );
  const total = [...bytes.values()].reduce((n, b) => n + b, 0);
  let done = 0;
  const started = performance.now();
  return await submitBatch(input.chain, input.submitter, input.key, txs, (what, s) => {
    input.onTx?.(what, s);
    const b = bytes.get(what);
    if (b === undefined || s.status !== "committed") return;
    done += b;
    input.onUpload?.(done, total, performance.now() - started);
  });
}

/** The decoded size of an upload's base64 chunk. */
function chunkBytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  return (data.length / 4) * 3 - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}
