/**
 * The devnet scenario's own journal (`<devnet>/scenario.json`): which phase the scenario is in and what it
 * learned from the chain at each phase change. It is written atomically (temp file, fsync, rename) before
 * the scenario acts on a new phase, so a devnet killed at any moment resumes in the same phase; everything
 * else (steps settled, the forged claim, losses) is read back from the chain.
 *
 * Phases: `cohort` (a cohort collected, proposed, reviewed, voted and activated) → `honest` (the first honest
 * steps) → `forge` (one step with the forging worker in the pipeline) → `after` (the honest steps after it,
 * which complete the cohort's schedule) → `evaluate` (the cohort's evaluation, scored by the Evaluator with
 * a score forger in its pool, to the gate's decision) → `done`. Without the forge the scenario goes `cohort`
 * → `honest` → `evaluate` → `done`.
 *
 * @example
 * ```ts
 * import { loadScenario, newScenario, saveScenario } from "./scenario_journal.ts";
 * const s = (await loadScenario(dir)) ?? newScenario(5, true);
 * await saveScenario(dir, { ...s, phase: "forge", forge_from_height: 42 });
 * ```
 */
import { canonical, hasExactKeys, isObject, parseJson } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";

/** A scenario phase. */
export type ScenarioPhase = "cohort" | "honest" | "forge" | "after" | "evaluate" | "done";

/** The journaled scenario. */
export interface Scenario {
  /** Honest steps before the forged one. */
  readonly steps: number;
  readonly forge: boolean;
  /** Honest steps after the forged one. */
  readonly after: number;
  readonly phase: ScenarioPhase;
  /** The chain height when the forging pipeline was first used (claims from here on are forged). */
  readonly forge_from_height: number | null;
  /** The forged claim, once it is on the chain. */
  readonly forge_claim: string | null;
}

const FIELDS = ["steps", "forge", "after", "phase", "forge_from_height", "forge_claim"];
const PHASES: readonly string[] = ["cohort", "honest", "forge", "after", "evaluate", "done"];

/**
 * A scenario about to start whose cohort schedules `cohortSteps` steps: with the forge, the forged step is
 * tried before the last two scheduled steps (before the first of a 1- or 2-step cohort) and the step it
 * claimed is trained again honestly, so every scheduled step settles.
 */
export function scenarioFor(cohortSteps: number, forge: boolean): Scenario {
  const after = forge ? Math.min(2, cohortSteps) : 0;
  return newScenario(cohortSteps - after, forge, after);
}

/** A scenario about to start. */
export function newScenario(steps: number, forge: boolean, after = 2): Scenario {
  return { steps, forge, after, phase: "cohort", forge_from_height: null, forge_claim: null };
}

/** The settled steps the scenario wants at the end of `phase`. */
export function targetSteps(s: Scenario, phase: ScenarioPhase): number {
  if (phase === "cohort") return 0;
  if (phase === "honest" || !s.forge) return s.steps;
  if (phase === "forge") return s.steps + 1;
  return s.steps + s.after;
}

/** Reads the journal of the devnet at `dir`; null when the scenario never started. */
export async function loadScenario(dir: string): Promise<Scenario | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${dir}/scenario.json`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const v = parseJson(text);
  if (
    !isObject(v) || !hasExactKeys(v, FIELDS) || !Number.isSafeInteger(v.steps) ||
    typeof v.forge !== "boolean" ||
    !Number.isSafeInteger(v.after) || !PHASES.includes(v.phase as string)
  ) {
    throw new ProtocolError("invalid_value", `Cannot resume the devnet: ${dir}/scenario.json is malformed`);
  }
  return v as unknown as Scenario;
}

/** Writes the journal durably (temp file, fsync, rename). */
export async function saveScenario(dir: string, s: Scenario): Promise<void> {
  const tmp = `${dir}/scenario.json.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true });
  try {
    await file.write(new TextEncoder().encode(canonical(s as never) + "\n"));
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, `${dir}/scenario.json`);
}
