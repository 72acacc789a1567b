/**
 * Where the explorer reads a network from. A `ChainSource` answers the chain head, committed blocks, where a
 * transaction was committed, and the validator's read-only query paths (PROTOCOL §13). Two implementations
 * answer the same questions: `StateSource` opens a validator's `state.sqlite` read-only and runs the ledger's
 * own query code on it; `RpcSource` asks a running validator over HTTP. Nothing here can write.
 */
import type { JsonObject, JsonValue } from "../core/canonical.ts";

/** The chain head. `chain_id` is null for a chain that has committed no block yet. */
export interface ChainStatus {
  readonly chain_id: string | null;
  readonly genesis_id: string;
  readonly height: number;
  readonly app_hash: string;
  readonly time: number;
}

/** What a committed transaction returned. */
export interface TxOutcome {
  readonly ok: boolean;
  readonly code?: string;
  readonly message?: string;
}

/** A committed block: `block` is `{chain_id, height, time, prev_app_hash, last_commit, txs}`. */
export interface BlockRecord {
  readonly height: number;
  readonly block: JsonObject;
  readonly app_hash: string;
  readonly results: readonly TxOutcome[];
}

/** A read-only view of one network. */
export interface ChainSource {
  /** How the source was opened, for the page footer (`state /path/state.sqlite`, `rpc http://…`). */
  readonly description: string;
  /** The chain head. */
  status(): Promise<ChainStatus>;
  /** A committed block, or null when `height` is not committed. */
  block(height: number): Promise<BlockRecord | null>;
  /** The height and index of a committed transaction by raw hash, or null. */
  tx(hash: string): Promise<{ height: number; index: number } | null>;
  /** A read-only query path with its query string (`/lifecycle`, `/claim?id=…`); null when unknown. */
  query(path: string): Promise<JsonValue | null>;
  /** Releases the database or connections. */
  close(): void;
}
