import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CHUNK_TREE_DEPTH,
  chunkPath,
  chunkPaths,
  chunkRoot,
  chunkRootOfParts,
  isChunkPath,
  verifyChunk,
} from "../../core/chunk_tree.ts";

const MiB = 1024 * 1024;
const h = (...parts: Uint8Array[]) => {
  const x = createHash("sha256");
  for (const p of parts) x.update(p);
  return new Uint8Array(x.digest());
};
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The tree written out the long way: all 256 leaves, then every level, no shortcuts. */
function naiveRoot(bytes: Uint8Array): string {
  let level: Uint8Array[] = [];
  for (let i = 0; i < 256; i++) {
    const chunk = bytes.subarray(Math.min(i * MiB, bytes.length), Math.min((i + 1) * MiB, bytes.length));
    level.push(h(new Uint8Array([0]), chunk));
  }
  while (level.length > 1) {
    const up: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) up.push(h(new Uint8Array([1]), level[i]!, level[i + 1]!));
    level = up;
  }
  return hex(level[0]!);
}

function object(size: number, seed: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let i = 0; i < size; i += 4096) b[i] = (i / 4096 + 31 * Math.floor(i / MiB) + seed) & 255;
  return b;
}

Deno.test("the chunk root is the 256-leaf tree of 0x00-prefixed chunk hashes and 0x01-prefixed nodes", () => {
  for (const size of [0, 1, MiB - 1, MiB, MiB + 1, 3 * MiB + 5, 8 * MiB]) {
    assert.equal(chunkRoot(object(size, size)), naiveRoot(object(size, size)), `size ${size}`);
  }
  // The empty object: every leaf is sha256(0x00), so its root is fixed.
  let e = h(new Uint8Array([0]));
  for (let l = 0; l < 8; l++) e = h(new Uint8Array([1]), e, e);
  assert.equal(chunkRoot(new Uint8Array(0)), hex(e));
  // A one-chunk object differs from its leaf alone and from the same bytes with one more zero byte.
  const one = object(100, 3);
  assert.notEqual(chunkRoot(one), hex(h(new Uint8Array([0]), one)));
  assert.notEqual(chunkRoot(one), chunkRoot(new Uint8Array([...one, 0])));
});

Deno.test("every chunk verifies along its path at its index, and nothing else does", () => {
  const bytes = object(5 * MiB + 17, 9);
  const root = chunkRoot(bytes), paths = chunkPaths(bytes);
  assert.equal(paths.length, 6);
  for (let i = 0; i < 6; i++) {
    const chunk = bytes.subarray(i * MiB, (i + 1) * MiB);
    assert.equal(paths[i]!.length, CHUNK_TREE_DEPTH);
    assert.deepEqual(chunkPath(bytes, i), paths[i]);
    assert.equal(isChunkPath(paths[i]), true);
    assert.equal(verifyChunk(chunk, i, paths[i]!, root), true, `chunk ${i}`);
    // The same chunk at another index, with another chunk's path, or one bit changed: refused.
    assert.equal(verifyChunk(chunk, (i + 1) % 6, paths[i]!, root), false);
    assert.equal(verifyChunk(chunk, i, paths[(i + 1) % 6]!, root), false);
    const bad = chunk.slice();
    bad[bad.length - 1]! ^= 1;
    assert.equal(verifyChunk(bad, i, paths[i]!, root), false);
  }
  // A short last chunk padded to 1 MiB is another leaf; an empty "chunk 6" is not the tree's either.
  const last = new Uint8Array(MiB);
  last.set(bytes.subarray(5 * MiB));
  assert.equal(verifyChunk(last, 5, paths[5]!, root), false);
  assert.equal(verifyChunk(new Uint8Array(0), 6, paths[5]!, root), false);
  assert.equal(verifyChunk(bytes.subarray(0, MiB), -1, paths[0]!, root), false);
  assert.equal(verifyChunk(bytes.subarray(0, MiB), 256, paths[0]!, root), false);
});

Deno.test("a path is exactly 8 lowercase hex roots", () => {
  const p = chunkPath(object(10, 1), 0);
  assert.equal(isChunkPath(p), true);
  assert.equal(isChunkPath(p.slice(1)), false);
  assert.equal(isChunkPath([...p, p[0]]), false);
  assert.equal(isChunkPath(p.map((x, i) => (i === 3 ? x.toUpperCase() : x))), false);
  assert.equal(isChunkPath("ab".repeat(32)), false);
  assert.equal(isChunkPath([]), false);
});

Deno.test("an object of more than 256 chunks has no chunk tree", () => {
  assert.throws(() => chunkRoot(new Uint8Array(256 * MiB + 1)), /257 chunks, at most 256/);
});

Deno.test("chunkRootOfParts equals chunkRoot of the parts' concatenation, pieces crossing chunk boundaries", () => {
  const whole = object(5 * MiB + 123, 7);
  for (
    const cuts of [
      [],
      [0, 0],
      [1],
      [MiB],
      [MiB - 1, MiB + 1],
      [100, 2 * MiB + 7, 2 * MiB + 7, 4 * MiB],
      [whole.length],
    ]
  ) {
    const edges = [0, ...cuts, whole.length];
    const parts = edges.slice(1).map((end, i) => whole.subarray(edges[i]!, end));
    assert.equal(chunkRootOfParts(parts), chunkRoot(whole), `cuts ${cuts}`);
  }
  assert.equal(chunkRootOfParts([]), chunkRoot(new Uint8Array(0)));
  assert.equal(chunkRootOfParts([new Uint8Array(0), new Uint8Array(0)]), chunkRoot(new Uint8Array(0)));
  // One more byte is another object.
  assert.notEqual(chunkRootOfParts([whole, new Uint8Array(1)]), chunkRoot(whole));
  assert.throws(() => chunkRootOfParts([new Uint8Array(256 * MiB), new Uint8Array(1)]), RangeError);
});
