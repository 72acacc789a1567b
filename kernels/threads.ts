/**
 * How many threads the kernels may use: a local setting that never changes a bit of any output (threads
 * split output columns, never one sum; see `kernels/wasm/pool.ts`).
 *
 * `NEURO_THREADS` sets it (an integer 1…`MAX_THREADS`); unset, it is the number of logical CPUs
 * (`navigator.hardwareConcurrency`), capped at `MAX_THREADS`. Without `--allow-env` the default applies.
 * A malformed value is rejected with `Cannot use NEURO_THREADS: value is "x", expected an integer 1..16`
 * when the setting is first read.
 *
 * @example
 * ```ts
 * import { kernelThreads } from "./threads.ts";
 * const n = kernelThreads(); // e.g. 2 on a 2-core machine
 * ```
 * @module
 */

import { ProtocolError } from "../core/errors.ts";

/** The most threads the kernels ever use, whatever the setting (the pool is bounded). */
export const MAX_THREADS = 16;

let chosen: number | undefined;

/** Parses a `NEURO_THREADS` value (undefined: the default for `cpus`); throws `invalid_config` on a bad one. */
export function parseThreads(value: string | undefined, cpus: number): number {
  if (value === undefined || value === "") return Math.max(1, Math.min(MAX_THREADS, Math.floor(cpus) || 1));
  if (!/^[1-9][0-9]*$/.test(value) || Number(value) > MAX_THREADS) {
    throw new ProtocolError(
      "invalid_setting",
      `Cannot use NEURO_THREADS: value is ${JSON.stringify(value)}, expected an integer 1..${MAX_THREADS}`,
    );
  }
  return Number(value);
}

/** The thread count for this process (read once from `NEURO_THREADS`, then fixed unless `setKernelThreads`). */
export function kernelThreads(): number {
  if (chosen === undefined) {
    let value: string | undefined;
    try {
      value = Deno.env.get("NEURO_THREADS");
    } catch {
      value = undefined; // no --allow-env: the default applies
    }
    chosen = parseThreads(value, navigator.hardwareConcurrency ?? 1);
  }
  return chosen;
}

/** Overrides the thread count for this process (tests and benchmarks compare 1, 2, 3 threads in one run). */
export function setKernelThreads(n: number): void {
  chosen = parseThreads(String(n), 1);
}
