/**
 * The committed ledger state in SQLite (WAL, `synchronous=FULL`): the key-value state, the blocks with their
 * app hashes and results, committed transactions by raw hash, and chain facts (genesis id, height, app
 * hash). A block's writes, its record and the new height are committed in one SQLite transaction, so a
 * crash leaves either the previous height or the new one, never a part.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { canonical, type JsonValue } from "../../core/canonical.ts";
import type { Change, KvReader } from "./overlay.ts";

/** What a committed transaction returned. */
export type TxResult = { ok: true } | { ok: false; code: string; message: string };

/** A committed block as stored. */
export interface StoredBlock {
  readonly height: number;
  readonly block: JsonValue;
  readonly app_hash: string;
  readonly results: TxResult[];
}

/** The chain facts of the last commit. */
export interface ChainHead {
  readonly genesis_id: string;
  readonly height: number;
  readonly app_hash: string;
  readonly time: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS state (tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (tbl, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocks (height INTEGER PRIMARY KEY, block TEXT NOT NULL, app_hash TEXT NOT NULL,
  results TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS txs (hash TEXT PRIMARY KEY, height INTEGER NOT NULL, idx INTEGER NOT NULL,
  result TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chain (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;

/** The committed state of one node. Reads see only what was committed. */
export class LedgerStore implements KvReader {
  readonly #db: DatabaseSync;
  readonly #get: StatementSync;
  readonly #scan: StatementSync;
  readonly #put: StatementSync;
  readonly #del: StatementSync;
  readonly #putBlock: StatementSync;
  readonly #putTx: StatementSync;
  readonly #putChain: StatementSync;

  /** Opens (creating when missing) the state database at `path`. */
  constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
    this.#db.exec(SCHEMA);
    this.#get = this.#db.prepare("SELECT value FROM state WHERE tbl = ? AND key = ?");
    this.#scan = this.#db.prepare("SELECT key, value FROM state WHERE tbl = ? ORDER BY key");
    this.#put = this.#db.prepare("INSERT OR REPLACE INTO state (tbl, key, value) VALUES (?, ?, ?)");
    this.#del = this.#db.prepare("DELETE FROM state WHERE tbl = ? AND key = ?");
    this.#putBlock = this.#db.prepare(
      "INSERT INTO blocks (height, block, app_hash, results) VALUES (?, ?, ?, ?)",
    );
    this.#putTx = this.#db.prepare(
      "INSERT OR IGNORE INTO txs (hash, height, idx, result) VALUES (?, ?, ?, ?)",
    );
    this.#putChain = this.#db.prepare("INSERT OR REPLACE INTO chain (key, value) VALUES (?, ?)");
  }

  get(table: string, key: string): JsonValue | null {
    const row = this.#get.get(table, key) as { value: string } | undefined;
    return row ? JSON.parse(row.value) : null;
  }

  scan(table: string): [string, JsonValue][] {
    // SQLite orders TEXT by bytes (UTF-8), which equals code point order.
    return (this.#scan.all(table) as { key: string; value: string }[]).map((
      r,
    ) => [r.key, JSON.parse(r.value)]);
  }

  /** The chain head, or null for a store that was never initialised. */
  head(): ChainHead | null {
    const rows = this.#db.prepare("SELECT key, value FROM chain").all() as { key: string; value: string }[];
    if (rows.length === 0) return null;
    const m = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    return {
      genesis_id: m.genesis_id!,
      height: Number(m.height),
      app_hash: m.app_hash!,
      time: Number(m.time),
    };
  }

  /**
   * Commits a block atomically: its changes, its record (none for height 0), its transactions' results by raw
   * hash and the new head.
   */
  commit(
    head: ChainHead,
    changes: readonly Change[],
    record: { block: JsonValue; results: TxResult[]; txHashes: string[] } | null,
  ): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const [t, k, v] of changes) {
        if (v === null) this.#del.run(t, k);
        else this.#put.run(t, k, canonical(v));
      }
      if (record) {
        this.#putBlock.run(head.height, canonical(record.block), head.app_hash, canonical(record.results));
        record.txHashes.forEach((hash, i) =>
          this.#putTx.run(hash, head.height, i, canonical(record.results[i]!))
        );
      }
      this.#putChain.run("genesis_id", head.genesis_id);
      this.#putChain.run("height", String(head.height));
      this.#putChain.run("app_hash", head.app_hash);
      this.#putChain.run("time", String(head.time));
      this.#db.exec("COMMIT");
    } catch (e) {
      this.#db.exec("ROLLBACK");
      throw e;
    }
  }

  /** A committed block, or null. */
  block(height: number): StoredBlock | null {
    const row = this.#db.prepare("SELECT block, app_hash, results FROM blocks WHERE height = ?").get(
      height,
    ) as
      | { block: string; app_hash: string; results: string }
      | undefined;
    if (!row) return null;
    return { height, block: JSON.parse(row.block), app_hash: row.app_hash, results: JSON.parse(row.results) };
  }

  /** Where a transaction was committed (by raw hash), or null. */
  tx(hash: string): { height: number; index: number; result: TxResult } | null {
    const row = this.#db.prepare("SELECT height, idx, result FROM txs WHERE hash = ?").get(hash) as
      | { height: number; idx: number; result: string }
      | undefined;
    return row
      ? { height: Number(row.height), index: Number(row.idx), result: JSON.parse(row.result) }
      : null;
  }

  /** Closes the database. */
  close(): void {
    this.#db.close();
  }
}
