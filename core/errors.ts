/**
 * The protocol's error codes, registered in one place.
 *
 * A code is a stable string that is part of the protocol: once released it never changes meaning. Rejections
 * are values (`Rejection`), not exceptions; code that must abort with one throws a `ProtocolError`, which
 * callers treat as "never retry". Transient failures (a dropped connection, a busy store) are `RetryableError`.
 *
 * @example
 * ```ts
 * import { reject, ProtocolError } from "./errors.ts";
 * const r = reject("stale_nonce", "Cannot apply transaction: nonce is 7, expected 5");
 * if (!r.ok) throw new ProtocolError(r.code, r.message);
 * ```
 */

/** Every protocol error code with a one-line meaning. Append only; never rename or reuse a code. */
export const ERROR_CODES = {
  // Encoding (PROTOCOL §1).
  invalid_json: "the bytes are not well-formed JSON",
  duplicate_key: "an object has the same key twice",
  float_not_allowed: "a number with a fraction or exponent appeared where only integers are allowed",
  unsafe_integer: "an integer is outside the safe range |n| <= 2^53-1",
  trailing_data: "bytes follow the end of the JSON value",
  non_canonical: "the bytes are not the canonical encoding of the value they parse to",
  invalid_value: "a value cannot be encoded canonically (float, undefined, function, lone surrogate, ...)",
  too_deep: "a value nests deeper than the bound",
  invalid_hex_float: "a string is not the canonical hex-float spelling of a finite float64",
  invalid_hex: "a string is not lowercase hex of the expected length",
  // Objects and bounds.
  object_not_found: "no object is stored under that root",
  object_corrupt: "stored bytes do not hash to their root",
  too_large: "a value exceeds its size bound",
  // Keys, envelopes, transactions (PROTOCOL §2).
  invalid_key: "a key or key file is malformed or out of range",
  key_exists: "a key file already exists and is never overwritten",
  invalid_envelope: "a transaction envelope does not have exactly body, public_key and signature",
  invalid_body: "a transaction body is missing kind, chain_id or nonce, or has the wrong fields",
  invalid_signature: "a signature does not verify, is not strict DER or is high-S",
  wrong_chain_id: "the body's chain_id differs from the genesis chain id",
  stale_nonce: "the body's nonce is below the account's next nonce",
  future_nonce: "the body's nonce is above the account's next nonce",
  unknown_kind: "the transaction kind is not part of the protocol",
  invalid_amount: "an amount is not a positive safe integer of atoms",
  insufficient_funds: "the account cannot pay the amount and the fee",
  // Validators (PROTOCOL §4).
  unknown_validator: "no validator has that consensus key",
  reused_consensus_key: "a consensus key can be bonded only once, ever",
  invalid_possession: "the possession proof of a consensus key does not verify",
  invalid_bond_amount: "a bond is not a positive multiple of bond_unit",
  last_validator: "the last active validator cannot unbond",
  not_owner: "the sender does not own that validator, assignment or claim",
  withdraw_too_early: "the evidence period after removal has not passed",
  // Workflows and lifecycles (PROTOCOL §5-8).
  invalid_transition: "the event is not allowed in the current state",
  busy: "another assignment, claim or evaluation is live",
  expired: "a deadline has passed",
  budget_exhausted: "the period's step or growth budget is spent",
  wrong_parent: "the parent is not the current learning root",
  wrong_round: "the round is not the current training round",
  invalid_workers: "the worker list is empty, too long, has duplicates or invalid keys",
  no_batch: "no scheduled batch is available",
  invalid_record: "a training record fails the graph checks",
  invalid_receipt: "a receipt is missing or not signed by the reserved worker",
  already_paid: "this numerical work was paid before",
  invalid_challenge: "the challenge does not name a valid stage or object",
  invalid_upload: "an upload chunk is out of order, of the wrong size or not by the publisher",
  not_sealed: "a needed object is not sealed yet",
  seal_mismatch: "the uploaded chunks do not hash to the object's root",
  chunk_mismatch: "an upload chunk does not hash to the committed chunk root along its Merkle path",
  incomplete_evaluation: "an evaluation document has omitted targets",
  invalid_proposal: "a data proposal breaks a cohort rule",
  already_voted: "the owner already voted on this proposal",
  not_in_electorate: "the owner is not in the proposal's electorate",
  invalid_inference: "an inference request or response breaks a rule",
  unknown_job: "no inference job has that id",
  wrong_model: "the model root is not the current serving root, or the chain serves no model",
  // Evaluation (PROTOCOL §7).
  unknown_evaluation: "no evaluation has that id",
  out_of_order: "a score's offset is not its group's settled window count",
  // Data cohorts (PROTOCOL §6): one code for each way a proposal's document can be refused.
  wrong_previous: "a cohort document's previous root is not the current data root",
  window_not_at_cursor: "a cohort window does not start at its source's cursor",
  unknown_source: "a cohort window or document names a source that genesis does not pin",
  row_outside_window: "a cohort document's row is outside its source's window",
  relabelled_heldout: "a cohort document's role is not the one its source and held-out id fix",
  document_reused: "a cohort document id repeats or was consumed by an earlier cohort",
  position_reused: "a cohort (source, row) position repeats or was consumed by an earlier cohort",
  batch_reused: "a cohort batch root repeats or was consumed by an earlier cohort",
  mixed_row_lengths: "an evaluation group's rows do not share one length of at most 128",
  wrong_document_count: "a cohort does not have exactly 32 retention, 32 fresh and 1-128 train documents",
  cohort_pending: "a data proposal is pending or a cohort is still training",
  unknown_proposal: "no data proposal has that id",
  // Kernels and text (PROTOCOL §10-11).
  non_finite_tensor: "a tensor holds NaN or an infinity",
  invalid_tensor: "a tensor or safetensors file is malformed",
  invalid_model: "a model manifest or component is malformed",
  placement_failed: "the components cannot be placed on the workers' capacities",
  conformance_failed: "the kernels do not reproduce the pinned conformance vectors",
  codec_mismatch: "two different text codec roots were mixed",
  invalid_template: "a chat template uses something outside the bounded subset",
  invalid_conversation: "a conversation breaks a validation rule",
  invalid_tokenizer: "a tokenizer definition is malformed or out of bounds",
  invalid_batch: "a training batch or response-window setting breaks the window format",
  invalid_source: "a source spec, source file or source row is malformed",
  source_mismatch: "a source file's SHA-256 differs from the one its spec pins",
  invalid_setting: "a local setting (an environment variable such as NEURO_THREADS) is malformed",
  document_mismatch: "a proposed document's id, object or omitted targets differ from the raw row's",
  batch_mismatch: "a proposed batch differs from the window rebuilt from the raw row",
  near_duplicate: "a document is within the near-duplicate SimHash distance of another",
  // Actors and transport (PROTOCOL §12-13).
  conflicting_operation: "an operation id was reused with a different input",
  unauthorized: "the bearer token is missing or wrong",
  not_found: "no such path, transaction, block or object",
  bad_request: "the request is malformed",
  genesis_mismatch: "the genesis differs from the one the state was created with",
  app_hash_mismatch: "a replica computed a different app hash",
  journal_divergence: "a replayed journal diverges from its recorded states",
  mempool_full: "the proposer holds as many pending transactions as it may; retry later",
  request_timeout: "a request body did not arrive within the time bound",
  unavailable: "the service cannot answer now; the same request may succeed later",
  internal_error: "the service failed unexpectedly while answering",
  referee_error: "the referee could not reach a verdict (a crash or out of memory); the dispute stays open",
  // Hardening (issue 16).
  upstream_timeout: "the proposer a replica forwards to did not answer within the time bound",
  permission_denied: "the process lacks the Deno permission the operation needs",
  // Epoch controller (issue 14).
  invalid_config: "a configuration file is malformed, has an unknown field or a value out of range",
  day_budget_spent: "the UTC day's epoch or atom budget of an epoch controller is spent",
} as const;

/** A registered protocol error code. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** A rejection: the value every check returns instead of throwing. */
export interface Rejection {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly message: string;
}

/** Builds a rejection value. */
export function reject(code: ErrorCode, message: string): Rejection {
  return { ok: false, code, message };
}

/** True when `code` is a registered protocol error code. */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** A permanent failure with a protocol code: retrying the same input gives the same answer. */
export class ProtocolError extends Error {
  /** The stable protocol code. */
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "ProtocolError";
    this.code = code;
  }

  /** The rejection value this error carries. */
  toRejection(): Rejection {
    return reject(this.code, this.message);
  }
}

/** A transient failure (network, busy resource): the same operation may succeed later. */
export class RetryableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RetryableError";
  }
}

/** Throws a `ProtocolError` for a rejection; returns the value of an accepted result. */
export function unwrap<T>(result: { ok: true; value: T } | Rejection): T {
  if (!result.ok) throw new ProtocolError(result.code, result.message);
  return result.value;
}
