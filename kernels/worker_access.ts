/**
 * Whether a worker module may be started: both kernel pools (`wasm/pool.ts`, `task_pool.ts`) start web
 * workers only from a local module the process may read, and otherwise run every job on the calling thread
 * (the same bits, one core).
 *
 * @example
 * ```ts
 * import { workerRefusal } from "./worker_access.ts";
 * const why = workerRefusal(new URL("./task_worker.ts", import.meta.url)); // null when it may start
 * ```
 * @module
 */

/** Why a worker cannot be started from `url` (not a local file, or no read permission), or null if it can. */
export function workerRefusal(url: URL): string | null {
  let granted = false;
  try {
    granted = url.protocol === "file:" &&
      Deno.permissions.querySync({ name: "read", path: url }).state === "granted";
  } catch {
    granted = false;
  }
  return granted ? null : `no read permission for ${url.pathname}`;
}
