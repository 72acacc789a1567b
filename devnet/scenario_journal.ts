/**
 * The devnet scenario's own journal (`<devnet>/scenario.json`): how many epochs the scenario runs, which epoch
 * and phase it is in, and what it learned from the chain at each phase change. It is written atomically (temp
 * file, fsync, rename) before the scenario acts on a new phase, so a devnet killed at any moment resumes in the
 * same phase; everything else (steps settled, the forged claim, losses, decisions) is read back from the chain.
 *
 * One epoch's phases: `cohort` (a cohort collected, proposed, reviewed, voted and activated) → `honest` (the
 * first honest steps of its schedule) → `forge` (one step with the forging worker in the pipeline) → `after`
 * (the rest of the schedule) → `evaluate` (the cohort's evaluation to the gate's decision). Only epoch 1
 * forges (when the scenario forges at all: its step, its score and, after it, the paid answer); the other
 * epochs go `cohort` → `honest` → `evaluate`. After epoch 1's evaluation comes `inference` (paid answers
 * bought from the served model), then the next epoch's `cohort`, and after the last epoch `done`.
 *
 * @example
 * ```ts
 * import { loadScenario, newScenario, saveScenario } from "./scenario_journal.ts";
 * const s = (await loadScenario(dir)) ?? newScenario({ epochs: 2, steps: 5, forge: true });
 * await saveScenario(dir, { ...s, phase: "forge", forge_from_height: 42 });
 * ```
 */
import { canonical, hasExactKeys, isObject, parseJson } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { isRoot } from "../core/hex.ts";

/** A scenario phase. */
export type ScenarioPhase = "cohort" | "honest" | "forge" | "after" | "evaluate" | "inference" | "done";

/** The journaled scenario. */
export interface Scenario {
  /** Epochs the scenario runs. */
  readonly epochs: number;
  /** The current epoch, from 1 (`epochs` once done). */
  readonly epoch: number;
  /** Scheduled steps of every cohort (the genesis `steps_per_cohort`). */
  readonly steps: number;
  /** Epoch 1 forges a step, a score and, after it, an answer. */
  readonly forge: boolean;
  readonly phase: ScenarioPhase;
  /** The data root of each epoch's cohort once it is active, in epoch order. */
  readonly cohorts: readonly string[];
  /** The chain height when the forging pipeline was first used (claims from here on are forged). */
  readonly forge_from_height: number | null;
  /** The forged claim, once it is on the chain. */
  readonly forge_claim: string | null;
}

const FIELDS = ["epochs", "epoch", "steps", "forge", "phase", "cohorts", "forge_from_height", "forge_claim"];
const PHASES: readonly string[] = ["cohort", "honest", "forge", "after", "evaluate", "inference", "done"];

/** A scenario about to start. */
export function newScenario(o: { epochs: number; steps: number; forge: boolean }): Scenario {
  return {
    epochs: o.epochs,
    epoch: 1,
    steps: o.steps,
    forge: o.forge,
    phase: "cohort",
    cohorts: [],
    forge_from_height: null,
    forge_claim: null,
  };
}

/** True when the scenario's current epoch forges (epoch 1 of a forging scenario). */
export function forgesNow(s: Scenario): boolean {
  return s.forge && s.epoch === 1;
}

/**
 * How the current epoch's schedule is split around its forged step: `before` honest steps, the forged one
 * (tried before the last two, or first in a 1- or 2-step cohort), and the `after` steps that complete the
 * schedule (the first of them trains the forged step's batch again). Without the forge: all `before`.
 */
export function epochSplit(s: Scenario): { before: number; after: number } {
  const after = forgesNow(s) ? Math.min(2, s.steps) : 0;
  return { before: s.steps - after, after };
}

/** The settled steps (over every epoch) the sponsor is told to reach at the end of `phase` of this epoch. */
export function targetSteps(s: Scenario, phase: ScenarioPhase): number {
  const done = (s.epoch - 1) * s.steps;
  const { before } = epochSplit(s);
  if (phase === "cohort") return done;
  if (phase === "honest") return done + before;
  if (phase === "forge") return forgesNow(s) ? done + before + 1 : done + s.steps;
  return done + s.steps;
}

/** The sponsor's attempt budget for the whole scenario (fixed when its budget file is first written). */
export function sponsorBudget(s: Scenario): number {
  return s.epochs * (2 * s.steps + 2) + 4;
}

/** The phase after the current epoch's evaluation: the inference after epoch 1, the next epoch, or done. */
export function afterEvaluation(s: Scenario): Scenario {
  if (s.phase === "evaluate" && s.epoch === 1) return { ...s, phase: "inference" };
  if (s.epoch < s.epochs) {
    return { ...s, epoch: s.epoch + 1, phase: "cohort", forge_from_height: null, forge_claim: null };
  }
  return { ...s, phase: "done" };
}

function valid(v: unknown): boolean {
  if (!isObject(v) || !hasExactKeys(v, FIELDS)) return false;
  const ints = [v.epochs, v.epoch, v.steps].every((n) => Number.isSafeInteger(n) && (n as number) >= 1);
  return ints && (v.epoch as number) <= (v.epochs as number) && typeof v.forge === "boolean" &&
    PHASES.includes(v.phase as string) && Array.isArray(v.cohorts) && v.cohorts.every((c) => isRoot(c)) &&
    (v.forge_from_height === null || Number.isSafeInteger(v.forge_from_height)) &&
    (v.forge_claim === null || isRoot(v.forge_claim));
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
  if (!valid(v)) {
    throw new ProtocolError(
      "invalid_value",
      `Cannot resume the devnet: ${dir}/scenario.json is malformed or from an older devnet (--reset to rebuild)`,
    );
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
