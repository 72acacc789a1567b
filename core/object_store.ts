/**
 * The content-addressed object store: immutable blobs at `objects/<2 hex>/<62 hex>` named by the SHA-256 of
 * their bytes. A write goes to a unique temp file, is fsynced, then renamed into place (and the directory
 * fsynced), so a crash leaves either the whole object or nothing, and concurrent writers of the same object
 * are harmless. Every read re-hashes and refuses bytes that do not match their root.
 *
 * @example
 * ```ts
 * import { ObjectStore } from "./object_store.ts";
 * const store = new ObjectStore("/tmp/home/objects");
 * const root = await store.put(new TextEncoder().encode("hello"));
 * const bytes = await store.get(root);
 * ```
 */
import { sha256Hex } from "./digest.ts";
import { ProtocolError } from "./errors.ts";
import { isRoot } from "./hex.ts";
import { MAX_OBJECT_BYTES } from "./limits.ts";

/** Objects `putMany` writes at once. */
export const PUT_MANY_CONCURRENCY = 16;

/** A content-addressed store rooted at one directory. */
export class ObjectStore {
  /** @param dir the `objects` directory (created on first write) @param maxBytes the largest object */
  constructor(readonly dir: string, readonly maxBytes: number = MAX_OBJECT_BYTES) {}

  /** Where the object with `root` lives. */
  pathOf(root: string): string {
    if (!isRoot(root)) {
      throw new ProtocolError("invalid_hex", `Cannot address object: "${root}" is not a root`);
    }
    return `${this.dir}/${root.slice(0, 2)}/${root.slice(2)}`;
  }

  /** Stores `bytes` and returns their root. Writing an object that exists is a no-op. */
  async put(bytes: Uint8Array): Promise<string> {
    this.checkSize(bytes.length);
    const root = sha256Hex(bytes);
    if (await this.has(root)) return root;
    await syncDir(await this.writeUnsynced(root, bytes));
    return root;
  }

  /**
   * Stores many objects, each of which must hash to its root (`object_corrupt` before anything is written if
   * one does not), and returns once every one is durable. Each is written as `put` writes it (temp file,
   * fsync, rename) but `PUT_MANY_CONCURRENCY` at a time, and each folder a rename went into is fsynced once
   * at the end rather than after every object: a collect of a thousand documents costs a thousand file
   * syncs in parallel and at most 256 folder syncs, not two thousand syncs in a row.
   */
  async putMany(objects: Iterable<readonly [string, Uint8Array]>): Promise<void> {
    const todo: (readonly [string, Uint8Array])[] = [];
    const seen = new Set<string>();
    for (const [root, bytes] of objects) {
      this.checkSize(bytes.length);
      const actual = sha256Hex(bytes);
      if (actual !== root) {
        throw new ProtocolError(
          "object_corrupt",
          `Cannot store object: bytes hash to ${actual}, expected ${root}`,
        );
      }
      this.pathOf(root);
      if (!seen.has(root)) todo.push([root, bytes]);
      seen.add(root);
    }
    const folders = new Set<string>();
    let next = 0;
    const writer = async () => {
      while (next < todo.length) {
        const [root, bytes] = todo[next++]!;
        if (await this.has(root)) continue;
        folders.add(await this.writeUnsynced(root, bytes));
      }
    };
    await Promise.all(Array.from({ length: Math.min(PUT_MANY_CONCURRENCY, todo.length) }, writer));
    for (const folder of folders) await syncDir(folder);
  }

  /** Writes one object (temp file, fsync, rename) without syncing its folder; the folder. */
  private async writeUnsynced(root: string, bytes: Uint8Array): Promise<string> {
    const folder = `${this.dir}/${root.slice(0, 2)}`;
    await Deno.mkdir(folder, { recursive: true });
    const temp = `${folder}/.tmp-${root.slice(2, 18)}-${crypto.randomUUID()}`;
    const file = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
    try {
      let written = 0;
      while (written < bytes.length) written += await file.write(bytes.subarray(written));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.rename(temp, this.pathOf(root));
    return folder;
  }

  /** Stores bytes that must hash to `root`; `object_corrupt` if they do not. */
  async putExpected(root: string, bytes: Uint8Array): Promise<void> {
    const actual = sha256Hex(bytes);
    if (actual !== root) {
      throw new ProtocolError(
        "object_corrupt",
        `Cannot store object: bytes hash to ${actual}, expected ${root}`,
      );
    }
    await this.put(bytes);
  }

  /** True when an object with `root` is stored (its bytes are checked on read, not here). */
  async has(root: string): Promise<boolean> {
    try {
      await Deno.stat(this.pathOf(root));
      return true;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  }

  /** The bytes of `root`, re-hashed: `object_not_found` or `object_corrupt` otherwise. */
  async get(root: string): Promise<Uint8Array> {
    const path = this.pathOf(root);
    let bytes: Uint8Array;
    try {
      const info = await Deno.stat(path);
      this.checkSize(info.size);
      bytes = await Deno.readFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new ProtocolError("object_not_found", `Cannot read object ${root}: not in ${this.dir}`);
      }
      throw e;
    }
    const actual = sha256Hex(bytes);
    if (actual !== root) {
      throw new ProtocolError("object_corrupt", `Cannot read object ${root}: stored bytes hash to ${actual}`);
    }
    return bytes;
  }

  private checkSize(size: number): void {
    if (size > this.maxBytes) {
      throw new ProtocolError(
        "too_large",
        `Cannot store object: ${size} bytes exceeds the bound of ${this.maxBytes}`,
      );
    }
  }
}

/** fsyncs a directory so a rename inside it is durable. */
async function syncDir(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    dir.close();
  }
}
