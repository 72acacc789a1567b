/**
 * The chunk tree of an uploaded object (PROTOCOL §5 "Chunk trees"): a Merkle tree over the object's 1 MiB
 * upload chunks, so each chunk can be checked on its own at `upload`, beside the object's content root (the
 * SHA-256 of all its bytes), which stays what names the object.
 *
 * The tree always has `MAX_UPLOAD_CHUNKS` (256) leaves, depth 8, so it has no odd levels: leaf i is
 * `sha256(0x00 ‖ chunk i)` for the object's chunks and the empty leaf `sha256(0x00)` (the hash of an empty
 * chunk, which no upload can carry) after its last one; an inner node is `sha256(0x01 ‖ left ‖ right)`. The
 * 0x00/0x01 prefixes keep a leaf from ever passing for a node. An empty object has every leaf empty; a
 * one-chunk object has leaf 0 and 255 empty ones. A chunk's path is the 8 sibling hashes from the leaf level
 * up, lowercase hex.
 *
 * @example
 * ```ts
 * import { chunkPath, chunkRoot, verifyChunk } from "./chunk_tree.ts";
 * const bytes = new Uint8Array(3 * 1024 * 1024 + 5);
 * const root = chunkRoot(bytes);
 * verifyChunk(bytes.subarray(1 << 20, 2 << 20), 1, chunkPath(bytes, 1), root); // true
 * ```
 */
import { createHash } from "node:crypto";
import { isRoot } from "./hex.ts";
import { MAX_UPLOAD_CHUNKS, UPLOAD_CHUNK_BYTES } from "./limits.ts";

/** The tree's depth: log2 of `MAX_UPLOAD_CHUNKS`, the length of every path. */
export const CHUNK_TREE_DEPTH = Math.log2(MAX_UPLOAD_CHUNKS);

const LEAF_PREFIX = new Uint8Array([0]);

function leaf(chunk: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(LEAF_PREFIX).update(chunk).digest());
}

function node(left: Uint8Array, right: Uint8Array): Uint8Array {
  return new Uint8Array(
    createHash("sha256").update(new Uint8Array([1])).update(left).update(right).digest(),
  );
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The root of an all-empty subtree at each level, from the empty leaf (level 0) up. */
const EMPTY: Uint8Array[] = (() => {
  const out = [leaf(new Uint8Array(0))];
  for (let l = 1; l <= CHUNK_TREE_DEPTH; l++) out.push(node(out[l - 1]!, out[l - 1]!));
  return out;
})();

/**
 * The leaves over the concatenation of `parts` (the object's bytes in pieces, e.g. a file's header and each
 * tensor's data where they already are): each chunk's hash is fed the pieces it spans, so no piece is copied.
 */
function leaves(parts: readonly Uint8Array[]): Uint8Array[] {
  const size = parts.reduce((n, p) => n + p.length, 0);
  const n = Math.ceil(size / UPLOAD_CHUNK_BYTES);
  if (n > MAX_UPLOAD_CHUNKS) {
    throw new RangeError(
      `Cannot build a chunk tree: ${n} chunks, at most ${MAX_UPLOAD_CHUNKS}`,
    );
  }
  if (parts.length === 1) {
    const bytes = parts[0]!, out: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      out.push(leaf(bytes.subarray(i * UPLOAD_CHUNK_BYTES, (i + 1) * UPLOAD_CHUNK_BYTES)));
    }
    return out;
  }
  const out: Uint8Array[] = [];
  let hash = createHash("sha256").update(LEAF_PREFIX), room = UPLOAD_CHUNK_BYTES;
  for (const part of parts) {
    for (let at = 0; at < part.length;) {
      const take = Math.min(room, part.length - at);
      hash.update(part.subarray(at, at + take));
      at += take;
      room -= take;
      if (room === 0) {
        out.push(new Uint8Array(hash.digest()));
        hash = createHash("sha256").update(LEAF_PREFIX);
        room = UPLOAD_CHUNK_BYTES;
      }
    }
  }
  if (room < UPLOAD_CHUNK_BYTES) out.push(new Uint8Array(hash.digest()));
  return out;
}

/** Every level of the tree over the bytes of `parts`, leaves first; each level lists only its non-empty prefix. */
function levels(parts: readonly Uint8Array[]): Uint8Array[][] {
  const out: Uint8Array[][] = [leaves(parts)];
  for (let l = 1; l <= CHUNK_TREE_DEPTH; l++) {
    const below = out[l - 1]!, here: Uint8Array[] = [];
    for (let i = 0; i < below.length; i += 2) here.push(node(below[i]!, below[i + 1] ?? EMPTY[l - 1]!));
    out.push(here);
  }
  return out;
}

/** The chunk root of an object's bytes (hex). */
export function chunkRoot(bytes: Uint8Array): string {
  return chunkRootOfParts([bytes]);
}

/**
 * The chunk root of the object whose bytes are `parts` one after another (`chunkRoot` of their
 * concatenation, without building it).
 */
export function chunkRootOfParts(parts: readonly Uint8Array[]): string {
  return hex(chunkRootBytesOfParts(parts));
}

/** `chunkRootOfParts` as its 32 raw bytes. */
export function chunkRootBytesOfParts(parts: readonly Uint8Array[]): Uint8Array {
  return levels(parts)[CHUNK_TREE_DEPTH]![0] ?? EMPTY[CHUNK_TREE_DEPTH]!;
}

/** The Merkle path of chunk `index` of `bytes`: its 8 sibling hashes, leaf level first (hex). */
export function chunkPath(bytes: Uint8Array, index: number): string[] {
  return chunkPaths(bytes)[index]!;
}

/** The path of every chunk of `bytes`, in chunk order (one tree built for all of them). */
export function chunkPaths(bytes: Uint8Array): string[][] {
  const t = levels([bytes]);
  return t[0]!.map((_, index) =>
    t.slice(0, CHUNK_TREE_DEPTH).map((level, l) => hex(level[(index >> l) ^ 1] ?? EMPTY[l]!))
  );
}

/** Whether `path` is well formed: exactly `CHUNK_TREE_DEPTH` lowercase hex roots. */
export function isChunkPath(path: unknown): path is string[] {
  return Array.isArray(path) && path.length === CHUNK_TREE_DEPTH && path.every(isRoot);
}

/** Whether `chunk` is leaf `index` of the tree with root `root` along `path` (a well-formed path). */
export function verifyChunk(
  chunk: Uint8Array,
  index: number,
  path: readonly string[],
  root: string,
): boolean {
  if (!Number.isSafeInteger(index) || index < 0 || index >= MAX_UPLOAD_CHUNKS) return false;
  let h = leaf(chunk);
  for (let l = 0; l < CHUNK_TREE_DEPTH; l++) {
    const sibling = Uint8Array.from(path[l]!.match(/../g)!, (x) => parseInt(x, 16));
    h = (index >> l) & 1 ? node(sibling, h) : node(h, sibling);
  }
  return hex(h) === root;
}
