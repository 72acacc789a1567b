/**
 * The proposer's mempool journal: every admitted transaction's exact bytes in `<home>/mempool.sqlite` (WAL,
 * `synchronous=FULL`), written and synced before the node answers `accepted`, deleted once the transaction
 * is committed or dropped. On restart the mempool re-admits the rows in arrival order, re-checking each
 * against the committed state, so a crash never forgets an accepted transaction.
 *
 * @example
 * ```ts
 * const store = MempoolStore.open("/tmp/v0/mempool.sqlite");
 * store.put(hash, raw, Date.now());
 * store.rows(); // [{hash, raw, received}] in arrival order
 * store.delete([hash]);
 * store.close();
 * ```
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";

/** One journaled transaction. */
export interface MempoolRow {
  readonly hash: string;
  readonly raw: Uint8Array;
  /** When this node first admitted it (ms since the epoch, local clock). */
  readonly received: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS pending (seq INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE,
  raw BLOB NOT NULL, received INTEGER NOT NULL);
`;

/** The durable journal of admitted transactions. */
export class MempoolStore {
  readonly #db: DatabaseSync;
  readonly #put: StatementSync;
  readonly #del: StatementSync;

  private constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;");
    this.#db.exec(SCHEMA);
    this.#put = this.#db.prepare("INSERT OR IGNORE INTO pending (hash, raw, received) VALUES (?, ?, ?)");
    this.#del = this.#db.prepare("DELETE FROM pending WHERE hash = ?");
  }

  /** Opens (creating when missing) the journal at `path` (":memory:" for tests). */
  static open(path: string): MempoolStore {
    return new MempoolStore(path);
  }

  /** Journals one admitted transaction; returns once it is on disk. */
  put(hash: string, raw: Uint8Array, received: number): void {
    this.#put.run(hash, raw, received);
  }

  /** Forgets transactions (committed or dropped), in one write. */
  delete(hashes: readonly string[]): void {
    if (hashes.length === 0) return;
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const h of hashes) this.#del.run(h);
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** Every journaled transaction in arrival order. */
  rows(): MempoolRow[] {
    const rows = this.#db.prepare("SELECT hash, raw, received FROM pending ORDER BY seq").all() as {
      hash: string;
      raw: Uint8Array;
      received: number | bigint;
    }[];
    return rows.map((r) => ({ hash: r.hash, raw: new Uint8Array(r.raw), received: Number(r.received) }));
  }

  /** Closes the database. */
  close(): void {
    this.#db.close();
  }
}
