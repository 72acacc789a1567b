/**
 * Key-value layers of ledger state. A `KvReader` answers `get` and `scan`; an `Overlay` records writes on top
 * of a parent reader without touching it, so a block (or one transaction inside it) is applied to an overlay
 * and either merged into its parent or dropped. A rejected transaction's overlay is dropped: nothing of it
 * remains, not even its nonce.
 */
import { compareCodePoints, type JsonValue } from "../../core/canonical.ts";

/** Reads ledger state by table and key. */
export interface KvReader {
  /** The value under (table, key), or null when absent. */
  get(table: string, key: string): JsonValue | null;
  /** Every (key, value) of a table, sorted by key. */
  scan(table: string): [string, JsonValue][];
}

/** One recorded write: the final value of a key in a block (`null` deletes it). */
export type Change = [table: string, key: string, value: JsonValue | null];

/** Orders changes by table, then key, by Unicode code point (PROTOCOL §3). */
export function sortChanges(changes: Change[]): Change[] {
  return changes.sort((a, b) => compareCodePoints(a[0], b[0]) || compareCodePoints(a[1], b[1]));
}

/** A layer of writes over a parent reader. */
export class Overlay implements KvReader {
  readonly #parent: KvReader;
  readonly #writes = new Map<string, Change>();

  constructor(parent: KvReader) {
    this.#parent = parent;
  }

  /** The reader below this layer. */
  get parent(): KvReader {
    return this.#parent;
  }

  get(table: string, key: string): JsonValue | null {
    const w = this.#writes.get(table + "\u0000" + key);
    return w ? w[2] : this.#parent.get(table, key);
  }

  scan(table: string): [string, JsonValue][] {
    const merged = new Map(this.#parent.scan(table));
    for (const [t, k, v] of this.#writes.values()) {
      if (t !== table) continue;
      if (v === null) merged.delete(k);
      else merged.set(k, v);
    }
    return [...merged.entries()].sort((a, b) => compareCodePoints(a[0], b[0]));
  }

  /** Records `value` (or a deletion when null) under (table, key). Values are never mutated afterwards. */
  set(table: string, key: string, value: JsonValue | null): void {
    this.#writes.set(table + "\u0000" + key, [table, key, value]);
  }

  /** A child layer whose writes reach this one only through `mergeInto`. */
  fork(): Overlay {
    return new Overlay(this);
  }

  /** Copies this layer's writes into `target` (normally its parent). */
  mergeInto(target: Overlay): void {
    for (const [t, k, v] of this.#writes.values()) target.set(t, k, v);
  }

  /** The number of keys written. */
  get size(): number {
    return this.#writes.size;
  }

  /** The writes of this layer sorted by table and key. */
  changes(): Change[] {
    return sortChanges([...this.#writes.values()]);
  }
}
