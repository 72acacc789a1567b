/**
 * The proposer's mempool journal: every admitted transaction's exact bytes in `<home>/mempool.sqlite` (WAL,
 * `synchronous=FULL`), written and synced before the node answers `accepted`, deleted once the transaction
 * is committed or dropped. Deletions are batched (at most one write a second, or every 512 rows): a row
 * that outlives its transaction is harmless, because on restart the mempool re-admits the rows in arrival
 * order re-checking each against the committed state, so a crash never forgets an accepted transaction.
 *
 * @example
 * ```ts
 * const store = MempoolStore.open("/tmp/v0/mempool.sqlite");
 * store.put(hash, raw, Date.now());
 * await store.synced(); // now it is on disk (rows admitted in the same turn share one write)
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

/** How long a write waits for more rows to share its sync. */
const SYNC_WINDOW_MS = 2;
const DELETE_EVERY_MS = 1_000;
const DELETE_BATCH = 512;

/** The durable journal of admitted transactions. */
export class MempoolStore {
  readonly #db: DatabaseSync;
  readonly #put: StatementSync;
  readonly #del: StatementSync;
  #doomed: string[] = [];
  #lastDelete = 0;
  #queued: MempoolRow[] = [];
  #sync: Promise<void> | null = null;

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

  /**
   * Queues one admitted transaction for the journal; `synced()` resolves once it is on disk. Rows queued
   * while the event loop finishes its current turn are written in one transaction (one sync for all).
   */
  put(hash: string, raw: Uint8Array, received: number): void {
    this.#queued.push({ hash, raw, received });
  }

  /** Resolves once every row queued so far is on disk; rejects if the write failed. */
  synced(): Promise<void> {
    if (this.#queued.length === 0) return Promise.resolve();
    this.#sync ??= new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        this.#sync = null;
        try {
          this.#write();
          resolve();
        } catch (e) {
          reject(e);
        }
      }, SYNC_WINDOW_MS);
    });
    return this.#sync;
  }

  #write(): void {
    const rows = this.#queued;
    this.#queued = [];
    if (rows.length === 0) return;
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const r of rows) this.#put.run(r.hash, r.raw, r.received);
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** Forgets transactions (committed or dropped); written with the next batch. */
  delete(hashes: readonly string[]): void {
    this.#doomed.push(...hashes);
    const now = Date.now();
    if (this.#doomed.length >= DELETE_BATCH || now - this.#lastDelete >= DELETE_EVERY_MS) this.flush(now);
  }

  /** Writes the pending deletions now, in one transaction. */
  flush(now = Date.now()): void {
    this.#write();
    this.#lastDelete = now;
    if (this.#doomed.length === 0) return;
    const doomed = this.#doomed;
    this.#doomed = [];
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const h of doomed) this.#del.run(h);
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** Every journaled transaction in arrival order (pending deletions written first). */
  rows(): MempoolRow[] {
    this.flush();
    const rows = this.#db.prepare("SELECT hash, raw, received FROM pending ORDER BY seq").all() as {
      hash: string;
      raw: Uint8Array;
      received: number | bigint;
    }[];
    return rows.map((r) => ({ hash: r.hash, raw: new Uint8Array(r.raw), received: Number(r.received) }));
  }

  /** Writes pending deletions and closes the database. */
  close(): void {
    this.flush();
    this.#db.close();
  }
}
