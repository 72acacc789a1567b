/**
 * An actor's durable journal: one SQLite file (WAL, `synchronous=FULL`) holding operations, the results of
 * their steps, workflow instances and their events (see `event_log.ts`) and transaction submissions
 * (`submit.ts`).
 *
 * Rules (ARCHITECTURE "three kinds of state", PROTOCOL §12):
 * - `begin(opId, inputHash)` is committed before any side effect of the operation;
 * - `complete(opId, result)` is committed before any reply;
 * - a finished operation delivered again returns the recorded result, byte for byte;
 * - the same id with a different input hash is `conflicting_operation`;
 * - an operation begun but not finished is re-executed on restart; its steps already recorded are not
 *   repeated, so its result agrees with them.
 *
 * Every row carries the journal format version, so a later format can read (or refuse) an old journal.
 *
 * @example
 * ```ts
 * import { Journal, operationId } from "./journal.ts";
 * import { id } from "../../core/digest.ts";
 * const journal = Journal.open("/tmp/home/journal.sqlite");
 * const op = operationId("epoch-7", { step: 3 });
 * const first = journal.begin(op, id({ step: 3 }));
 * if (first.status !== "done") journal.complete(op, new TextEncoder().encode('{"ok":true}'));
 * ```
 */
import { DatabaseSync } from "node:sqlite";
import type { JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { crashPoint } from "./crash_point.ts";

/** The journal format written by this code. Journals of another format are refused. */
export const JOURNAL_FORMAT = 1;

/** The content-derived id of an operation (PROTOCOL §12): `id({session, operation})`, never a clock or counter. */
export function operationId(session: string, operation: JsonValue): string {
  return id({ session, operation });
}

/** An operation as recorded. `result` is null until the operation is done. */
export interface OperationRecord {
  readonly opId: string;
  readonly format: number;
  readonly handler: string;
  readonly inputHash: string;
  readonly input: Uint8Array | null;
  readonly status: "begun" | "done";
  readonly result: Uint8Array | null;
  readonly seq: number;
}

/** What `begin` found: a new operation, one begun before (re-execute it), or one done (reply with `result`). */
export type BeginOutcome =
  | { readonly status: "new" }
  | { readonly status: "begun" }
  | { readonly status: "done"; readonly result: Uint8Array };

/** A recorded step result. */
export interface StepRecord {
  readonly name: string;
  readonly result: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS operations(
  op_id TEXT PRIMARY KEY, format INTEGER NOT NULL, handler TEXT NOT NULL, input_hash TEXT NOT NULL,
  input BLOB, status TEXT NOT NULL CHECK (status IN ('begun', 'done')), result BLOB, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS operations_begun ON operations(seq) WHERE status = 'begun';
CREATE TABLE IF NOT EXISTS steps(
  op_id TEXT NOT NULL, pos INTEGER NOT NULL, format INTEGER NOT NULL, name TEXT NOT NULL, result TEXT NOT NULL,
  PRIMARY KEY (op_id, pos));
CREATE TABLE IF NOT EXISTS instances(
  instance TEXT PRIMARY KEY, format INTEGER NOT NULL, machine TEXT NOT NULL, machine_version INTEGER NOT NULL,
  initial TEXT NOT NULL, initial_hash TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events(
  instance TEXT NOT NULL, seq INTEGER NOT NULL, format INTEGER NOT NULL, machine TEXT NOT NULL,
  machine_version INTEGER NOT NULL, op_id TEXT, op_pos INTEGER, event TEXT NOT NULL, env TEXT NOT NULL,
  outcome TEXT NOT NULL, state TEXT NOT NULL, state_hash TEXT NOT NULL, PRIMARY KEY (instance, seq));
CREATE UNIQUE INDEX IF NOT EXISTS events_op ON events(op_id, op_pos) WHERE op_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS submissions(
  intent TEXT PRIMARY KEY, format INTEGER NOT NULL, hash TEXT NOT NULL, raw BLOB NOT NULL,
  status TEXT NOT NULL, height INTEGER, code TEXT, message TEXT, seq INTEGER NOT NULL);
`;

type Row = Record<string, unknown>;

/** The durable journal of one actor. */
export class Journal {
  /** The open database. Runtime modules (`event_log.ts`, `submit.ts`) add their rows through it. */
  readonly db: DatabaseSync;

  private constructor(readonly path: string, db: DatabaseSync) {
    this.db = db;
  }

  /**
   * Opens (creating if needed) the journal at `path`; refuses a journal of another format. With `readOnly`
   * the file must exist and nothing is written (for tools that inspect a journal).
   */
  static open(path: string, options: { readonly readOnly?: boolean } = {}): Journal {
    if (options.readOnly) return Journal.openReadOnly(path);
    const db = new DatabaseSync(path);
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;");
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(SCHEMA);
      const row = db.prepare("SELECT value FROM meta WHERE key = 'format'").get() as Row | undefined;
      if (row === undefined) {
        db.prepare("INSERT INTO meta(key, value) VALUES ('format', ?)").run(String(JOURNAL_FORMAT));
      } else if (row.value !== String(JOURNAL_FORMAT)) {
        throw new ProtocolError(
          "journal_divergence",
          `Cannot open journal ${path}: format is ${row.value}, expected ${JOURNAL_FORMAT}`,
        );
      }
      db.exec("COMMIT");
    } catch (e) {
      db.exec("ROLLBACK");
      db.close();
      throw e;
    }
    return new Journal(path, db);
  }

  private static openReadOnly(path: string): Journal {
    try {
      Deno.statSync(path);
    } catch {
      throw new ProtocolError("not_found", `Cannot open journal ${path}: no such file`);
    }
    const db = new DatabaseSync(path, { readOnly: true });
    let format: unknown;
    try {
      format = (db.prepare("SELECT value FROM meta WHERE key = 'format'").get() as Row | undefined)?.value;
    } catch {
      format = undefined;
    }
    if (format !== String(JOURNAL_FORMAT)) {
      db.close();
      throw new ProtocolError(
        "journal_divergence",
        `Cannot open journal ${path}: format is ${format ?? "missing"}, expected ${JOURNAL_FORMAT}`,
      );
    }
    return new Journal(path, db);
  }

  /** Closes the database. */
  close(): void {
    this.db.close();
  }

  /** Runs `fn` in one committed transaction (all its writes reach the disk together, or none). */
  transaction<T>(fn: () => T): T {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const out = fn();
      this.db.exec("COMMIT");
      return out;
    } catch (e) {
      this.db.exec("ROLLBACK");
      throw e;
    }
  }

  /**
   * Records that operation `opId` with input hash `inputHash` starts, committed before any side effect.
   * `handler` and `input` are kept so an unfinished operation can be re-executed after a restart.
   * Throws `ProtocolError(conflicting_operation)` when the id was recorded with another input hash.
   */
  begin(
    opId: string,
    inputHash: string,
    options: { readonly handler?: string; readonly input?: Uint8Array } = {},
  ): BeginOutcome {
    const found = this.operation(opId);
    if (found !== null) {
      if (found.inputHash !== inputHash) {
        throw new ProtocolError(
          "conflicting_operation",
          `Cannot begin operation ${opId}: input hash is ${inputHash}, recorded ${found.inputHash}`,
        );
      }
      return found.status === "done" ? { status: "done", result: found.result! } : { status: "begun" };
    }
    this.db.prepare(
      `INSERT INTO operations(op_id, format, handler, input_hash, input, status, result, seq)
       VALUES (?, ?, ?, ?, ?, 'begun', NULL, (SELECT COALESCE(MAX(seq), 0) + 1 FROM operations))`,
    ).run(opId, JOURNAL_FORMAT, options.handler ?? "", inputHash, options.input ?? null);
    crashPoint("begin");
    return { status: "new" };
  }

  /**
   * Records the result of a begun operation, committed before any reply, and returns the recorded bytes.
   * Completing a finished operation again with the same bytes is a no-op; with other bytes it throws
   * `ProtocolError(journal_divergence)`: a re-execution disagreed with what was recorded.
   */
  complete(opId: string, result: Uint8Array): Uint8Array {
    const found = this.operation(opId);
    if (found === null) {
      throw new ProtocolError("not_found", `Cannot complete operation ${opId}: it was never begun`);
    }
    if (found.status === "done") {
      if (!sameBytes(found.result!, result)) {
        throw new ProtocolError(
          "journal_divergence",
          `Cannot complete operation ${opId}: result differs from the one recorded`,
        );
      }
      return found.result!;
    }
    this.db.prepare("UPDATE operations SET status = 'done', result = ? WHERE op_id = ? AND status = 'begun'")
      .run(result, opId);
    crashPoint("complete");
    return result;
  }

  /** The recorded operation `opId`, or null. */
  operation(opId: string): OperationRecord | null {
    const row = this.db.prepare("SELECT * FROM operations WHERE op_id = ?").get(opId) as Row | undefined;
    return row === undefined ? null : toOperation(row);
  }

  /** Every operation, in the order they began. */
  operations(): OperationRecord[] {
    return (this.db.prepare("SELECT * FROM operations ORDER BY seq").all() as Row[]).map(toOperation);
  }

  /** Operations begun and not finished, in the order they began (re-executed on restart). */
  unfinished(): OperationRecord[] {
    return (this.db.prepare("SELECT * FROM operations WHERE status = 'begun' ORDER BY seq").all() as Row[])
      .map(toOperation);
  }

  /** The result recorded for step `pos` of operation `opId` (canonical JSON), or null. */
  stepResult(opId: string, pos: number): StepRecord | null {
    const row = this.db.prepare("SELECT name, result FROM steps WHERE op_id = ? AND pos = ?").get(
      opId,
      pos,
    ) as
      | Row
      | undefined;
    return row === undefined ? null : { name: String(row.name), result: String(row.result) };
  }

  /** Every recorded step of operation `opId`, by position. */
  steps(opId: string): (StepRecord & { readonly pos: number })[] {
    const rows = this.db.prepare("SELECT pos, name, result FROM steps WHERE op_id = ? ORDER BY pos").all(
      opId,
    ) as Row[];
    return rows.map((r) => ({ pos: Number(r.pos), name: String(r.name), result: String(r.result) }));
  }

  /** Records the result (canonical JSON text) of step `pos` of operation `opId`; committed on return. */
  recordStep(opId: string, pos: number, name: string, result: string): void {
    this.db.prepare("INSERT INTO steps(op_id, pos, format, name, result) VALUES (?, ?, ?, ?, ?)").run(
      opId,
      pos,
      JOURNAL_FORMAT,
      name,
      result,
    );
    crashPoint("step");
  }
}

function toOperation(row: Row): OperationRecord {
  return {
    opId: String(row.op_id),
    format: Number(row.format),
    handler: String(row.handler),
    inputHash: String(row.input_hash),
    input: row.input instanceof Uint8Array ? row.input : null,
    status: row.status === "done" ? "done" : "begun",
    result: row.result instanceof Uint8Array ? row.result : null,
    seq: Number(row.seq),
  };
}

/** True when two byte arrays are equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
