/**
 * Every lifecycle machine of the project, by its journal name. The replay tool (`deno task replay`) and the
 * docs task (`deno task docs`) look machines up here; a new machine is added here once.
 *
 * @example
 * ```ts
 * import { machineByName } from "./registry.ts";
 * machineByName("training")?.version; // 1
 * ```
 */
import type { Machine, MachineEvent, MachineState } from "./machine.ts";
import { cohort } from "./cohort.ts";
import { epoch } from "./epoch.ts";
import { evaluation } from "./evaluation.ts";
import { growth } from "./growth.ts";
import { inference } from "./inference.ts";
import { score } from "./score.ts";
import { training } from "./training.ts";
import { validatorMachine } from "./validator.ts";

/** A machine of any state, event and params type, as the registry holds it. */
export type RegisteredMachine = Machine<MachineState, MachineEvent, unknown>;

/** Every machine, keyed by its `name`, in the order of the protocol's sections. */
export const MACHINES: Readonly<Record<string, RegisteredMachine>> = Object.freeze(
  Object.fromEntries(
    ([
      validatorMachine,
      training,
      growth,
      cohort,
      evaluation,
      score,
      inference,
      epoch,
    ] as unknown as RegisteredMachine[])
      .map((m) => [m.name, m]),
  ),
);

/** The machine recorded under `name` in journals, or undefined. */
export function machineByName(name: string): RegisteredMachine | undefined {
  return Object.hasOwn(MACHINES, name) ? MACHINES[name] : undefined;
}

/** The file each machine is defined in, relative to the repository root (for generated docs). */
export const MACHINE_FILES: Readonly<Record<string, string>> = Object.freeze({
  validator: "workflows/validator.ts",
  training: "workflows/training.ts",
  growth: "workflows/growth.ts",
  cohort: "workflows/cohort.ts",
  evaluation: "workflows/evaluation.ts",
  score: "workflows/score.ts",
  inference: "workflows/inference.ts",
  epoch: "workflows/epoch.ts",
});
