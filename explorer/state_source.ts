/**
 * The explorer's source for a stopped or running network read from a validator's `state.sqlite`, opened
 * **read-only** (`node:sqlite` with `readOnly`): committed WAL transactions are visible, and the file is never
 * created, initialised, migrated or written. Queries run the ledger's own query code (`ledger/query.ts`) over
 * a `LedgerView`, which has no write methods.
 *
 * @example
 * ```ts
 * import { StateSource } from "./state_source.ts";
 * const source = StateSource.open(".neuroshard/devnet/validator-0/state.sqlite");
 * (await source.status()).height;
 * source.close();
 * ```
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { isObject, type JsonObject, type JsonValue } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { answerQuery } from "../ledger/query.ts";
import { LedgerView } from "../ledger/state/accessors.ts";
import type { KvReader } from "../ledger/state/overlay.ts";
import type { BlockRecord, ChainSource, ChainStatus } from "./source.ts";

/** A ledger state database opened read-only. */
export class StateSource implements ChainSource, KvReader {
  readonly description: string;
  readonly #db: DatabaseSync;
  readonly #get: StatementSync;
  readonly #scan: StatementSync;
  readonly #head: StatementSync;
  readonly #block: StatementSync;
  readonly #tx: StatementSync;
  #chainId: string | null = null;

  private constructor(path: string, db: DatabaseSync) {
    this.description = `state ${path}`;
    this.#db = db;
    this.#get = db.prepare("SELECT value FROM state WHERE tbl = ? AND key = ?");
    this.#scan = db.prepare("SELECT key, value FROM state WHERE tbl = ? ORDER BY key");
    this.#head = db.prepare("SELECT key, value FROM chain");
    this.#block = db.prepare("SELECT block, app_hash, results FROM blocks WHERE height = ?");
    this.#tx = db.prepare("SELECT height, idx FROM txs WHERE hash = ?");
  }

  /**
   * Opens `path` read-only. A missing file, a file that is not a ledger state, or one that was never
   * initialised is refused (`not_found`, `bad_request`) without creating or changing anything.
   */
  static open(path: string): StateSource {
    let exists = false;
    try {
      exists = Deno.statSync(path).isFile;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (!exists) {
      throw new ProtocolError(
        "not_found",
        `Cannot open state: ${path} does not exist, expected a validator's state.sqlite`,
      );
    }
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(path, { readOnly: true });
    } catch (e) {
      throw new ProtocolError(
        "bad_request",
        `Cannot open state: ${path} is not readable as SQLite: ${(e as Error).message}`,
      );
    }
    try {
      const source = new StateSource(path, db);
      if (source.#rows().length === 0) throw new Error("it has no chain head");
      return source;
    } catch (e) {
      db.close();
      throw new ProtocolError(
        "bad_request",
        `Cannot open state: ${path} is not an initialised ledger state (${(e as Error).message})`,
      );
    }
  }

  #rows(): { key: string; value: string }[] {
    return this.#head.all() as { key: string; value: string }[];
  }

  get(table: string, key: string): JsonValue | null {
    const row = this.#get.get(table, key) as { value: string } | undefined;
    return row ? JSON.parse(row.value) : null;
  }

  scan(table: string): [string, JsonValue][] {
    return (this.#scan.all(table) as { key: string; value: string }[]).map((
      r,
    ) => [r.key, JSON.parse(r.value)]);
  }

  status(): Promise<ChainStatus> {
    return Promise.resolve(this.#status());
  }

  #status(): ChainStatus {
    const m = Object.fromEntries(this.#rows().map((r) => [r.key, r.value]));
    const height = Number(m.height);
    if (this.#chainId === null && height >= 1) {
      const first = this.#blockAt(1);
      this.#chainId = first && typeof first.block.chain_id === "string" ? first.block.chain_id : null;
    }
    return {
      chain_id: this.#chainId,
      genesis_id: String(m.genesis_id),
      height,
      app_hash: String(m.app_hash),
      time: Number(m.time),
    };
  }

  block(height: number): Promise<BlockRecord | null> {
    return Promise.resolve(this.#blockAt(height));
  }

  #blockAt(height: number): BlockRecord | null {
    const row = this.#block.get(height) as { block: string; app_hash: string; results: string } | undefined;
    if (!row) return null;
    const block = JSON.parse(row.block) as JsonValue;
    return {
      height,
      block: isObject(block) ? block : {} as JsonObject,
      app_hash: row.app_hash,
      results: JSON.parse(row.results),
    };
  }

  tx(hash: string): Promise<{ height: number; index: number } | null> {
    const row = this.#tx.get(hash) as { height: number; idx: number } | undefined;
    return Promise.resolve(row ? { height: Number(row.height), index: Number(row.idx) } : null);
  }

  query(path: string): Promise<JsonValue | null> {
    const s = this.#status();
    const head = { ...s, chain_id: s.chain_id ?? "" };
    return Promise.resolve(answerQuery(path, new LedgerView(this), head));
  }

  close(): void {
    this.#db.close();
  }
}
