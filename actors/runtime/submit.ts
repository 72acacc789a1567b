/**
 * Submitting a signed transaction exactly once per intent (ARCHITECTURE "Lost acknowledgements",
 * PROTOCOL §12).
 *
 * 1. The intent (a content-derived id of what the actor wants done) is looked up in the journal. If it has a
 *    record, the recorded bytes are used: `sign` is never called again for that intent, so no second
 *    signature and no second nonce exist while its outcome is unknown — or ever.
 * 2. Otherwise `sign()` is called once and the exact signed bytes and their raw hash (sha256 of the bytes)
 *    are committed to the journal before anything is sent.
 * 3. The bytes are sent to `POST /broadcast_tx`. A CheckTx rejection is final (after one lookup shows the
 *    hash was not committed before, e.g. by an earlier process). A lost reply (connection reset, timeout,
 *    5xx) is not a failure: the hash is looked up with `GET /tx?hash=` until the confirmation deadline; when
 *    the validator has never seen it, the same bytes are sent again (same hash, same nonce: harmless). A
 *    resumed record (left `signed` by a crash, or `unknown`) is looked up first and sent only if unseen.
 * 4. The outcome is committed: `committed` (in a block, executed), `rejected` (refused by CheckTx, or in a
 *    block with a failed result), or `unknown` (no answer by the deadline). Submitting an `unknown` intent
 *    again resumes from step 3 with the recorded bytes.
 *
 * An intent's record is final once `committed` or `rejected`: trying again after a rejection (a new nonce,
 * a new signature) is a new intent, e.g. `id({session, operation, attempt})`.
 *
 * @example
 * ```ts
 * import { Journal } from "./journal.ts";
 * import { Submitter } from "./submit.ts";
 * import { TransportClient } from "./transport.ts";
 * const submitter = new Submitter(Journal.open("/tmp/home/journal.sqlite"), new TransportClient("http://127.0.0.1:26657", null));
 * const record = await submitter.submit("intent-id", () => new TextEncoder().encode("{...signed envelope...}"));
 * ```
 */
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import { crashPoint } from "./crash_point.ts";
import { type Journal, JOURNAL_FORMAT } from "./journal.ts";
import { parseBroadcastAnswer, parseTxAnswer, RPC_PATHS, type TxAnswer } from "./rpc_types.ts";
import type { TransportClient } from "./transport.ts";

/** Where a submission stands. `signed`: journaled, outcome not yet settled by this or an earlier process. */
export type SubmissionStatus = "signed" | "committed" | "rejected" | "unknown";

/** A journaled submission. */
export interface Submission {
  readonly intent: string;
  readonly hash: string;
  readonly raw: Uint8Array;
  readonly status: SubmissionStatus;
  /** The block height when included in a block, else null. */
  readonly height: number | null;
  /** The rejection code and message when rejected, else null. */
  readonly code: string | null;
  readonly message: string | null;
}

/** Timing bounds. */
export interface SubmitOptions {
  /** How long to wait for a confirmation after sending (default 30 s). */
  readonly confirmMs?: number;
  /** Pause between lookups (default 250 ms). */
  readonly pollMs?: number;
}

type Outcome = Pick<Submission, "status" | "height" | "code" | "message">;
type Row = Record<string, unknown>;

/** Submits signed transactions through one RPC endpoint, journaling every step. */
export class Submitter {
  constructor(
    readonly journal: Journal,
    readonly rpc: TransportClient,
    readonly options: SubmitOptions = {},
  ) {}

  /** The journaled submission of `intent`, or null. */
  record(intent: string): Submission | null {
    const row = this.journal.db.prepare("SELECT * FROM submissions WHERE intent = ?").get(intent) as
      | Row
      | undefined;
    return row === undefined ? null : toSubmission(row);
  }

  /** Every journaled submission, oldest first. */
  records(): Submission[] {
    return (this.journal.db.prepare("SELECT * FROM submissions ORDER BY seq").all() as Row[]).map(
      toSubmission,
    );
  }

  /**
   * Submits the transaction for `intent`, calling `sign` only when the intent has no record yet, and returns
   * the journaled record with its outcome. Settled records are returned without contacting the validator.
   */
  async submit(intent: string, sign: () => Uint8Array | Promise<Uint8Array>): Promise<Submission> {
    let sub = this.record(intent);
    const fresh = sub === null;
    if (sub === null) {
      const raw = await sign();
      this.journal.db.prepare(
        `INSERT INTO submissions(intent, format, hash, raw, status, height, code, message, seq)
         VALUES (?, ?, ?, ?, 'signed', NULL, NULL, NULL, (SELECT COALESCE(MAX(seq), 0) + 1 FROM submissions))`,
      ).run(intent, JOURNAL_FORMAT, sha256Hex(raw), raw);
      crashPoint("submit_signed");
      sub = this.record(intent)!;
    }
    if (sub.status === "committed" || sub.status === "rejected") return sub;
    const outcome = await this.settle(sub, fresh);
    this.journal.db.prepare(
      "UPDATE submissions SET status = ?, height = ?, code = ?, message = ? WHERE intent = ?",
    )
      .run(outcome.status, outcome.height, outcome.code, outcome.message, intent);
    crashPoint("submit_final");
    return this.record(intent)!;
  }

  /** Drives a record to an outcome; a resumed record is looked up before anything is sent again. */
  private async settle(sub: Submission, fresh: boolean): Promise<Outcome> {
    const deadline = Date.now() + (this.options.confirmMs ?? 30_000);
    const pollMs = this.options.pollMs ?? 250;
    let send = fresh;
    for (;;) {
      if (send) {
        send = false;
        const checked = await this.broadcast(sub);
        crashPoint("submit_sent");
        if (checked !== null) {
          // Refused by CheckTx. An earlier send (by a process that crashed) may have been committed, in which
          // case a re-send is refused as a stale nonce: the ledger's record of the hash decides.
          const seen = await this.lookup(sub.hash);
          if (seen?.status === "committed") return committedOutcome(seen);
          if (seen?.status !== "pending") {
            return { status: "rejected", height: null, code: checked.code, message: checked.message };
          }
        }
      }
      const seen = await this.lookup(sub.hash);
      if (seen?.status === "committed") return committedOutcome(seen);
      if (Date.now() + pollMs > deadline) {
        return { status: "unknown", height: null, code: null, message: null };
      }
      if (seen?.status === "unknown") send = true; // never arrived or dropped: the same bytes again
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /**
   * Sends the bytes; returns the CheckTx rejection, or null when admitted or when the reply was lost. Any
   * other answer (4xx, malformed) throws and leaves the record unsettled, to be resumed.
   */
  private async broadcast(sub: Submission): Promise<{ code: string; message: string } | null> {
    let answer;
    try {
      answer = parseBroadcastAnswer(await this.rpc.json("POST", RPC_PATHS.broadcastTx, sub.raw));
    } catch (e) {
      if (e instanceof RetryableError) return null; // lost reply: the lookups decide
      throw e; // a 4xx is not a CheckTx verdict (wrong token, wrong path): the record stays as it is
    }
    if (answer.hash !== sub.hash) {
      throw new ProtocolError(
        "bad_request",
        `Cannot submit intent ${sub.intent}: validator hashed the bytes to ${answer.hash}, expected ${sub.hash}`,
      );
    }
    return answer.check.ok ? null : { code: answer.check.code, message: answer.check.message };
  }

  /** Looks the hash up; null when the validator cannot be reached. */
  private async lookup(hash: string): Promise<TxAnswer | null> {
    try {
      return parseTxAnswer(await this.rpc.json("GET", `${RPC_PATHS.tx}?hash=${hash}`));
    } catch (e) {
      if (e instanceof RetryableError) return null;
      throw e;
    }
  }
}

function committedOutcome(seen: Extract<TxAnswer, { status: "committed" }>): Outcome {
  return seen.result.ok
    ? { status: "committed", height: seen.height, code: null, message: null }
    : { status: "rejected", height: seen.height, code: seen.result.code, message: seen.result.message };
}

function toSubmission(r: Row): Submission {
  return {
    intent: String(r.intent),
    hash: String(r.hash),
    raw: r.raw as Uint8Array,
    status: String(r.status) as SubmissionStatus,
    height: r.height === null ? null : Number(r.height),
    code: r.code === null ? null : String(r.code),
    message: r.message === null ? null : String(r.message),
  };
}
