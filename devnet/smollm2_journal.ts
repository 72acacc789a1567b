/**
 * The SmolLM2 scenario's journal, `<dir>/smollm2-scenario.json`: the phase it is in, what earlier phases
 * found (the cohorts, the forged claim, the growth's outcome, the answer, the evaluation), each finished
 * phase's wall time, and the peak
 * RSS seen of every process so far (kept across restarts). Written durably (temp file, fsync, rename) before
 * the scenario acts on a phase change, so a scenario killed at any moment resumes where it was.
 *
 * @example
 * ```ts
 * import { loadSmollm2Scenario, newSmollm2Scenario } from "./smollm2_journal.ts";
 * // const s = (await loadSmollm2Scenario(dir)) ?? newSmollm2Scenario();
 * ```
 */
import { canonical, isObject, type JsonObject, parseJson } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";

/** The phases, in order. */
export const SMOLLM2_PHASES = [
  "admit",
  "honest",
  "readmit",
  "forge",
  "grow",
  "grown",
  "answer",
  "evaluate",
  "paid",
  "done",
] as const;

/** A phase of the scenario. */
export type Smollm2Phase = typeof SMOLLM2_PHASES[number];

/** The journal. */
export interface Smollm2Scenario extends JsonObject {
  phase: Smollm2Phase;
  /** The data roots of the cohorts activated so far (the first trains the honest step, the second the rest). */
  cohorts: string[];
  /** The height from which the first claim is the forged one. */
  forge_from_height: number | null;
  forge_claim: string | null;
  /** The sponsor's `grown` line (`actors/sponsor/grow.ts`). */
  growth: JsonObject | null;
  /** The final model's greedy answer. */
  answer: { prompt: string; text: string; model_root: string } | null;
  /** The decided evaluation's id (the chain keeps its decision). */
  evaluation: string | null;
  /** The serving root the answer was bought from. */
  paid_model: string | null;
  /** Wall time of each finished phase in ms (a resumed phase counts from its resumption). */
  phase_ms: Record<string, number>;
  /** The time between the sponsor's `open` and `claim` lines of each paid step, ms, by phase. */
  step_ms: Record<string, number>;
  /** Wall time from the referee seeing each claim to each stage's verdict, ms per stage, by claim id. */
  replay_ms: Record<string, number[]>;
  /** Peak resident set (VmHWM) of every process, bytes, by process name. */
  peak_rss: Record<string, number>;
}

/** A scenario that has not started. */
export function newSmollm2Scenario(): Smollm2Scenario {
  return {
    phase: "admit",
    cohorts: [],
    forge_from_height: null,
    forge_claim: null,
    growth: null,
    answer: null,
    evaluation: null,
    paid_model: null,
    phase_ms: {},
    step_ms: {},
    replay_ms: {},
    peak_rss: {},
  };
}

const path = (dir: string) => `${dir}/smollm2-scenario.json`;

/** Reads the journal; null when the scenario never started. */
export async function loadSmollm2Scenario(dir: string): Promise<Smollm2Scenario | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path(dir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const v = parseJson(text);
  if (!isObject(v) || !SMOLLM2_PHASES.includes(v.phase as Smollm2Phase) || !isObject(v.peak_rss)) {
    throw new ProtocolError("invalid_value", `Cannot resume the devnet: ${path(dir)} is malformed`);
  }
  return { ...newSmollm2Scenario(), ...v } as Smollm2Scenario;
}

/** Writes the journal durably. */
export async function saveSmollm2Scenario(dir: string, s: Smollm2Scenario): Promise<void> {
  const tmp = `${path(dir)}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await file.write(new TextEncoder().encode(canonical(s) + "\n"));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, path(dir));
}

/**
 * The peak resident set (VmHWM) of process `pid` in bytes, read with `cat /proc/<pid>/status` (Deno lets only
 * --allow-all read another process's /proc files); null when it cannot be read (the process ended, no /proc).
 */
export async function peakRss(pid: number): Promise<number | null> {
  try {
    const out = await new Deno.Command("cat", {
      args: [`/proc/${pid}/status`],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(new TextDecoder().decode(out.stdout));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
