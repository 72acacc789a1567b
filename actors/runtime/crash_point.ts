/**
 * Crash points for fault tests: named places right after a journal write (or right after a side effect whose
 * result is not yet journaled) where a test may kill the process.
 *
 * Enabled only by the environment variable `NEURO_CRASH_AT=<point>:<n>` in a process started with permission
 * to read it (`core/test_hooks.ts`; no `deno task` grants it): the `n`-th time (1-based) the
 * process reaches `<point>`, it sends itself `SIGKILL`, so no `finally`, no flush and no exit handler runs —
 * the same as a power cut after the last fsync. Without the variable, `crashPoint` does nothing.
 *
 * @example
 * ```ts
 * import { crashPoint } from "./crash_point.ts";
 * crashPoint("begin"); // NEURO_CRASH_AT=begin:2 kills the process the second time this line runs
 * ```
 */

import { testHook } from "../../core/test_hooks.ts";

/** Every crash point the runtime declares, in the order a typical operation reaches them. */
export const CRASH_POINTS = [
  "begin", // operation begun and committed, nothing executed yet
  "instance", // workflow instance created and committed
  "event", // workflow event appended and committed, not yet acted on
  "effect", // a step's side effect ran, its result not yet journaled
  "step", // a step's result committed
  "complete", // operation result committed, reply not yet sent
  "submit_signed", // signed transaction bytes and hash committed, not yet broadcast
  "submit_sent", // broadcast answered (or lost), outcome not yet committed
  "submit_final", // submission outcome committed
] as const;

/** A declared crash point. */
export type CrashPointName = typeof CRASH_POINTS[number];

let plan: { point: string; n: number } | null | undefined;
const hits = new Map<string, number>();

function loadPlan(): { point: string; n: number } | null {
  const spec = testHook("NEURO_CRASH_AT"); // honoured only with explicit permission to read it
  if (spec === undefined || spec === "") return null;
  const m = /^([a-z_]+):([1-9][0-9]*)$/.exec(spec);
  if (!m || !(CRASH_POINTS as readonly string[]).includes(m[1]!)) {
    throw new Error(`Cannot read NEURO_CRASH_AT: "${spec}" is not <point>:<n> with a known point`);
  }
  return { point: m[1]!, n: Number(m[2]) };
}

/** Marks a crash point; kills the process here when `NEURO_CRASH_AT` names this point and hit. */
export function crashPoint(point: CrashPointName): void {
  const n = (hits.get(point) ?? 0) + 1;
  hits.set(point, n);
  if (plan === undefined) plan = loadPlan();
  if (plan !== null && plan.point === point && n === plan.n) Deno.kill(Deno.pid, "SIGKILL");
}

/** How many times each crash point was reached in this process (fault tests use it to size the matrix). */
export function crashPointHits(): ReadonlyMap<string, number> {
  return hits;
}
