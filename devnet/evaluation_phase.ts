/**
 * The devnet's evaluation phase (PROTOCOL §7), after the cohort's schedule has settled: runs the Evaluator
 * (`deno task evaluator`, its own process and home) over a pool of the three honest workers and, when the
 * scenario forges, the forging worker restarted with `--forge score` (on its port, so every workers file
 * stays true). The Evaluator opens the evaluation of the cohort's candidate (the learning root) against the
 * serving root, scores every window of the four groups, and finishes it; the ledger's integer gate decides.
 * The Evaluator starts each group on another worker of the pool, so exactly one group's first score (the
 * candidate's retention windows, the first score it submits) has the forger computing its head: it reports
 * those windows' losses halved, the referee (already running) replays the head, challenges and gets the score
 * rejected with the slash, and the Evaluator scores the window again on the next worker.
 *
 * Everything the phase does is journaled by the Evaluator (every transaction's intent, bytes and hash before
 * it is sent) or read from the chain, so a devnet killed during the phase runs the Evaluator again, which
 * continues the same evaluation and never signs a second transaction for the same purpose.
 *
 * @example
 * ```ts
 * import { runEvaluationPhase } from "./evaluation_phase.ts";
 * // await runEvaluationPhase({ sup, layout, rpc, workersFile, say, signal });
 * ```
 */
import { isObject, type JsonObject, parseJson } from "../core/canonical.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import type { DevnetLayout } from "../genesis/devnet_builder.ts";
import type { Supervisor } from "./supervisor.ts";

/** What the phase needs. */
export interface EvaluationPhase {
  readonly sup: Supervisor;
  readonly layout: DevnetLayout;
  readonly rpc: string;
  /** The Evaluator's workers file (the honest workers, and the score forger when the scenario forges). */
  readonly workersFile: string;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
  /** The label of its progress lines (default `[evaluate]`). */
  readonly label?: string;
}

/** True when the devnet was built with an Evaluator home (one built before the evaluation phase is not). */
export async function hasEvaluatorHome(layout: DevnetLayout): Promise<boolean> {
  return await Deno.stat(`${layout.evaluator}/account.key`).then(() => true, () => false);
}

/** A progress line for one of the Evaluator's JSON events; null for events not worth showing. */
export function evaluatorLine(line: string, label = "[evaluate]"): string | null {
  let e: JsonObject;
  try {
    const v = parseJson(line);
    if (!isObject(v)) return null;
    e = v;
  } catch {
    return line.startsWith("error") ? `${label} evaluator: ${line}` : null;
  }
  if (typeof e.event !== "string" || ["account", "waiting", "decision"].includes(e.event)) return null;
  const id = typeof e.evaluation === "string" ? ` ${e.evaluation.slice(0, 12)}` : "";
  // Window losses are hex floats on the wire; a person reads them as decimals.
  const detail = String(e.detail).replace(/-?0x[0-9a-f.]+p[+-]\d+/g, (h) => fromHexFloat(h).toFixed(4));
  return `${label} ${e.event}${id}: ${detail}`;
}

/** Runs the Evaluator to the decision (or resumes it); the decided evaluation as the chain answers it. */
export async function runEvaluationPhase(p: EvaluationPhase): Promise<JsonObject> {
  const child = await p.sup.start({
    name: "evaluator",
    task: "evaluator",
    listens: false,
    expectsExit: true,
    args: [
      "--home",
      p.layout.evaluator,
      "--rpc",
      p.rpc,
      "--workers",
      p.workersFile,
      "--poll-ms",
      "100",
      "--json",
    ],
  });
  let decided: JsonObject | null = null;
  child.onLine((line) => {
    const shown = evaluatorLine(line, p.label);
    if (shown !== null) p.say(shown);
    if (line.startsWith('{"evaluation"')) {
      const v = parseJson(line);
      if (isObject(v) && v.event === "decision" && isObject(v.evaluation)) decided = v.evaluation;
    }
  });
  const code = await Promise.race([
    child.exited,
    new Promise<number>((r) => p.signal.addEventListener("abort", () => r(-1), { once: true })),
  ]);
  if (p.signal.aborted) throw new Error("Cannot finish the evaluation phase: interrupted");
  if (code !== 0 || decided === null) {
    throw new Error(
      `Cannot finish the evaluation phase: the evaluator exited with ${code}:\n${
        child.tail.slice(-15).join("\n")
      }`,
    );
  }
  return decided;
}
