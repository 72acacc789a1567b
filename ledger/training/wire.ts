/**
 * The wire contract of training settlement (PROTOCOL §5, §12, §13): the exact body fields of `reserve`,
 * `claim`, `challenge`, `upload`, `seal`, `resolve` and `grow`, the claim and growth metadata, work receipts,
 * the work identity, upload chunking and the JSON answers of the validator query paths. Actors build what
 * they send with these functions; the ledger checks what it receives against them.
 *
 * Transaction bodies (besides `kind`, `chain_id`, `nonce`):
 *
 * | kind | fields |
 * |---|---|
 * | `reserve` | `parent` (learning root), `round` (training round), `workers` (1-64 account ids, stage order) |
 * | `claim` | `record_root`, `metadata` (ClaimMetadata), `workers`, `data_root`, `sequence_index` |
 * | `challenge` | `claim_id`, `stage`, `challenge_kind` (`"fraud"`, `"availability"`), `object_root` (null for fraud but `chunks`), `block`, `phase` (a training fraud challenge's block: an index in the stage or `"head"`, and `"forward"`, `"backward"` or `"update"`; or block null and `"chunks"` with the object whose committed chunk root is disputed; null otherwise) |
 * | `upload` | `claim_id`, `object_root`, `index` (chunks so far), `data` (strict base64, 1 B-1 MiB), `path` (the chunk's Merkle path, 8 roots, when the claim commits the object's chunk root and the challenge is not `chunks`; else `[]`) |
 * | `seal` | `claim_id`, `object_root` |
 * | `resolve` | `claim_id` |
 * | `grow` | `parent`, `model_root`, `metadata` (GrowMetadata), `capacities` (1-64 worker capacities) |
 *
 * Ids: an assignment's id is the txid of its `reserve`; a claim's id is the txid of its `claim` (or `grow`).
 * Without data cohorts the reserved batch is `training_batches[round mod n]`, `sequence_index = round mod n`
 * and `data_root = id([batch roots in genesis order])`.
 *
 * @example
 * ```ts
 * import { claimMetadata, receiptBody, signReceipt } from "./wire.ts";
 * // const receipts = traces.map((t, i) => signReceipt(receiptBody(chainId, assignmentId, recordRoot, i, record.traces[i]), keys[i]));
 * // const metadata = claimMetadata(record, traces, candidateManifest, receipts);
 * ```
 */
import { Buffer } from "node:buffer";
import { chunkPaths } from "../../core/chunk_tree.ts";
import { hasExactKeys, isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { UPLOAD_CHUNK_BYTES } from "../../core/limits.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import type { Assignment } from "../../workflows/training.ts";
import type { AccountKey } from "../keys.ts";
import { signCanonical, verifyCanonical } from "./sign.ts";
import type { DataLifecycleAnswer } from "../data/wire.ts";

/** The domain of every work receipt. */
export const RECEIPT_DOMAIN = "neuroshard/work/v1";

/** The body fields of each training transaction kind, besides `kind`, `chain_id` and `nonce`. */
export const TRAINING_TX_FIELDS = {
  reserve: ["parent", "round", "workers"],
  claim: ["record_root", "metadata", "workers", "data_root", "sequence_index"],
  challenge: ["claim_id", "stage", "challenge_kind", "object_root", "block", "phase"],
  upload: ["claim_id", "object_root", "index", "data", "path"],
  seal: ["claim_id", "object_root"],
  resolve: ["claim_id"],
  grow: ["parent", "model_root", "metadata", "capacities"],
} as const;

/** A training transaction kind. */
export type TrainingTxKind = keyof typeof TRAINING_TX_FIELDS;

/** `reserve` fields. */
export interface ReserveFields extends JsonObject {
  parent: string;
  round: number;
  workers: string[];
}
/** `claim` fields. */
export interface ClaimFields extends JsonObject {
  record_root: string;
  metadata: JsonObject;
  workers: string[];
  data_root: string;
  sequence_index: number;
}
/** `challenge` fields. */
export interface ChallengeFields extends JsonObject {
  claim_id: string;
  stage: number;
  challenge_kind: "fraud" | "availability";
  object_root: string | null;
  block: number | "head" | null;
  phase: "forward" | "backward" | "update" | "chunks" | null;
}
/** `upload` fields. */
export interface UploadFields extends JsonObject {
  claim_id: string;
  object_root: string;
  index: number;
  data: string;
  /** The chunk's Merkle path (8 roots) when the claim commits the object's chunk root, else `[]`. */
  path: string[];
}
/** `seal` fields. */
export interface SealFields extends JsonObject {
  claim_id: string;
  object_root: string;
}
/** `resolve` fields. */
export interface ResolveFields extends JsonObject {
  claim_id: string;
}
/** `grow` fields. */
export interface GrowFields extends JsonObject {
  parent: string;
  model_root: string;
  metadata: JsonObject;
  capacities: number[];
}

/** The signed part of a work receipt. */
export interface ReceiptBody extends JsonObject {
  domain: typeof RECEIPT_DOMAIN;
  chain_id: string;
  /** The assignment id (txid of the `reserve`). */
  assignment: string;
  record_root: string;
  stage: number;
  /** `record.traces[stage]`, the id of the stage's trace. */
  trace_root: string;
}

/** A work receipt: a worker's signature over a receipt body with its account key. */
export interface Receipt extends JsonObject {
  receipt: ReceiptBody;
  public_key: string;
  signature: string;
}

/** The receipt body of `stage` of a step. */
export function receiptBody(
  chainId: string,
  assignment: string,
  recordRoot: string,
  stage: number,
  traceRoot: string,
): ReceiptBody {
  return {
    domain: RECEIPT_DOMAIN,
    chain_id: chainId,
    assignment,
    record_root: recordRoot,
    stage,
    trace_root: traceRoot,
  };
}

/** Signs a receipt body with the worker's account key. */
export function signReceipt(body: ReceiptBody, key: AccountKey): Receipt {
  return { receipt: body, public_key: key.accountId, signature: signCanonical(body, key) };
}

/** Checks a receipt's shape and signature; `invalid_receipt` (with the reason) otherwise. */
export function verifyReceipt(value: unknown): { ok: true; value: Receipt } | Rejection {
  const bad = (why: string) => reject("invalid_receipt", `Cannot accept receipt: ${why}`);
  if (!isObject(value) || !hasExactKeys(value, ["receipt", "public_key", "signature"])) {
    return bad("expected exactly receipt, public_key and signature");
  }
  const b = value.receipt;
  if (
    !isObject(b) ||
    !hasExactKeys(b, ["domain", "chain_id", "assignment", "record_root", "stage", "trace_root"])
  ) {
    return bad("the body does not have exactly domain, chain_id, assignment, record_root, stage, trace_root");
  }
  if (b.domain !== RECEIPT_DOMAIN) {
    return bad(`domain is ${JSON.stringify(b.domain)}, expected ${RECEIPT_DOMAIN}`);
  }
  if (
    typeof b.chain_id !== "string" || !isRoot(b.assignment) || !isRoot(b.record_root) || !isRoot(b.trace_root)
  ) {
    return bad("chain_id, assignment, record_root or trace_root is malformed");
  }
  if (typeof b.stage !== "number" || !Number.isSafeInteger(b.stage) || b.stage < 0) {
    return bad(`stage is ${JSON.stringify(b.stage)}`);
  }
  const v = verifyCanonical(b, value.public_key, value.signature);
  if (!v.ok) return bad(v.message);
  return { ok: true, value: value as Receipt };
}

/**
 * The metadata of a training claim: every entry's key is `id(value)`. It holds exactly the record (under
 * `record_root`), each stage trace (under `record.traces[i]`), the candidate manifest (under
 * `record.model_root`) and one receipt per stage (under `id(receipt)`): 2 + 2·S entries.
 */
export function claimMetadata(
  record: StepRecord,
  traces: readonly StageTrace[],
  candidate: Manifest,
  receipts: readonly Receipt[],
): JsonObject {
  const values: JsonValue[] = [
    record as unknown as JsonValue,
    ...(traces as unknown as JsonValue[]),
    candidate as unknown as JsonValue,
    ...receipts,
  ];
  return keyedById(values);
}

/** The metadata of a growth: exactly one entry, the grown manifest under its root (`model_root`). */
export function growMetadata(grown: Manifest): JsonObject {
  return keyedById([grown as unknown as JsonValue]);
}

/** An object holding each value under `id(value)`. */
export function keyedById(values: readonly JsonValue[]): JsonObject {
  const out: JsonObject = {};
  for (const v of values) out[id(v)] = v;
  return out;
}

/**
 * The work identity (§5.1): `id({weights, batch, targets, learning_rate, clip})` where `weights` is the parent
 * manifest's component map (name → root), `batch` the batch root, `targets` `id(batch.labels)`, and the lr and
 * clip are hex floats. It names the numerical work only: no ancestry, placement, round or nonce.
 */
export function workIdentity(parent: Manifest, batch: Batch, learningRate: string, clip: string): string {
  return id({
    weights: parent.components,
    batch: id(batch as unknown as JsonValue),
    targets: id(batch.labels as unknown as JsonValue),
    learning_rate: learningRate,
    clip,
  });
}

/** Splits object bytes into `upload` data: strict base64 chunks of 1 MiB, the last one 1 B-1 MiB. */
export function uploadChunks(bytes: Uint8Array): string[] {
  const out: string[] = [];
  for (let at = 0; at < bytes.length; at += UPLOAD_CHUNK_BYTES) {
    out.push(Buffer.from(bytes.subarray(at, at + UPLOAD_CHUNK_BYTES)).toString("base64"));
  }
  return out;
}

/**
 * The `path` of each of an object's upload chunks: its path in the object's chunk tree (`core/chunk_tree.ts`)
 * when `committed` (the claim commits the object's chunk root and the challenge is not `chunks`), else `[]`.
 */
export function uploadPaths(bytes: Uint8Array, committed: boolean): string[][] {
  return committed ? chunkPaths(bytes) : uploadChunks(bytes).map(() => []);
}

/** Decodes strict base64 (standard alphabet, padded, re-encoding reproduces it); null when malformed. */
export function decodeBase64Strict(data: unknown): Uint8Array | null {
  if (typeof data !== "string" || data.length === 0 || data.length % 4 !== 0) return null;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return null;
  const bytes = new Uint8Array(Buffer.from(data, "base64"));
  return Buffer.from(bytes).toString("base64") === data ? bytes : null;
}

/**
 * How a live or finished claim is shown: its id, which lifecycle, and the machine state, which is JSON of
 * - training: `{status, assignment: Assignment, claim: Claim, work: {record_root, model_root, work_identity,
 *   metadata_root}, moves, reason?}` (status `claimed|challenged|uploading|resolving|settled|rejected|expired`)
 * - growth: `{status, claim: Claim, growth: {parent, model_root, metadata_root, added_blocks}, moves, reason?}`
 *
 * where `Claim = {id, owner, bond, stages, deadline, expires, challenge}` and a live `challenge` is
 * `{owner, kind, stage, object_root, bond, needed: [roots, sorted], uploads: [{object_root, chunks, bytes}],
 * sealed: [roots, sorted], deadline}` (see workflows/_claim.ts). A rejected state's `reason` is
 * `"mismatch: <check>"`, the check that failed (`forward output`, `head loss`, `head gradient`, `input gradient`,
 * `gradient norm`, `optimizer update`, `growth`; a score's `window loss`, `next-token argmax`), or
 * `"availability challenge unanswered"`. The publisher of uploads is the claim owner for an availability
 * challenge and the challenger for a fraud challenge; `resolve` may be sent by anyone.
 */
export interface ClaimView extends JsonObject {
  claim_id: string;
  kind: "training" | "growth";
  /** The `workflows/training.ts` or `workflows/growth.ts` state (with `status`, `moves`, `reason` when rejected). */
  state: JsonObject;
}

/**
 * `GET /lifecycle`. `data_root`, `batches` (n), `learning_rate` and `clip` describe the genesis training
 * schedule (null/0 on a chain whose genesis has no training section; on a chain with a data lifecycle
 * `data_root` is the current data root and `batches` 0); `assignment` is the live reservation and
 * `claim` the pending claim (training or growth), each null when there is none.
 */
export interface LifecycleAnswer extends JsonObject {
  height: number;
  learning_root: string | null;
  serving_root: string | null;
  training_round: number;
  data_root: string | null;
  batches: number;
  learning_rate: string | null;
  clip: string | null;
  period: { index: number; steps: number; growths: number };
  assignment: (Assignment & JsonObject) | null;
  claim: ClaimView | null;
  /** The data lifecycle (`ledger/data/wire.ts`), null on a chain that trains on genesis batches. */
  data: DataLifecycleAnswer | null;
}

/** `GET /candidate`: the learning root's manifest, what the next step trains from. */
export interface CandidateAnswer extends JsonObject {
  learning_root: string;
  serving_root: string;
  manifest: JsonObject;
}

/** `GET /claim?id=<claim_id>`: any claim ever made (live, settled, rejected or expired) and its metadata. */
export interface ClaimAnswer extends ClaimView {
  metadata: JsonObject;
}

/** `GET /work?identity=<id>`: whether this numerical work was paid, and by which claim. */
export interface WorkAnswer extends JsonObject {
  identity: string;
  paid: boolean;
  claim_id: string | null;
}

/**
 * The query paths of training settlement. Answers are canonical JSON except `/object/<root>`, which answers
 * the raw sealed bytes (`application/octet-stream`); an unknown id or root is 404 `not_found`.
 * - `/manifest?root=<root>` → the manifest JSON (the genesis model and every claimed candidate or growth)
 * - `/batch?root=<root>` → the batch JSON `{input_ids, labels}` (genesis training batches)
 */
export const TRAINING_QUERY_PATHS = [
  "/lifecycle",
  "/candidate",
  "/claim?id=",
  "/work?identity=",
  "/object/",
  "/manifest?root=",
  "/batch?root=",
] as const;

/**
 * The genesis training section `training: {learning_rate, clip, batches}` (hex floats and batch JSONs) and the
 * model field `model: {manifest, root}`; both null on a chain without training.
 */
export interface TrainingGenesis extends JsonObject {
  learning_rate: string;
  clip: string;
  batches: JsonObject[];
}
