/**
 * The worker's memory of chunk roots (`core/chunk_tree.ts`) by content root, so the objects a trace names
 * again and again — a stage's parent components are the previous step's updated ones — are hashed once.
 * Bounded: the oldest entries go first past `MAX_CHUNK_ROOTS`.
 *
 * @example
 * ```ts
 * import { ChunkRootCache } from "./chunk_roots.ts";
 * const cache = new ChunkRootCache();
 * // const r = await cache.of(root, () => store.get(root));
 * ```
 */
import { chunkRoot } from "../../core/chunk_tree.ts";

/** How many chunk roots the worker remembers. */
export const MAX_CHUNK_ROOTS = 4096;

/** Chunk roots by content root, computed from the bytes on first use. */
export class ChunkRootCache {
  readonly #roots = new Map<string, string>();

  /** The chunk root of object `root`, reading its bytes with `bytes` when not remembered. */
  async of(root: string, bytes: () => Promise<Uint8Array>): Promise<string> {
    const known = this.#roots.get(root);
    if (known !== undefined) return known;
    const r = chunkRoot(await bytes());
    this.remember(root, r);
    return r;
  }

  /** Remembers the chunk root of `root` (dropping the oldest past the bound). */
  remember(root: string, chunk: string): void {
    this.#roots.delete(root);
    this.#roots.set(root, chunk);
    while (this.#roots.size > MAX_CHUNK_ROOTS) this.#roots.delete(this.#roots.keys().next().value!);
  }
}
