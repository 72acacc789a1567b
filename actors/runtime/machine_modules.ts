/**
 * Finding the machines a journal needs beyond the project's registry (`workflows/registry.ts`): any module a
 * tester names (`deno task replay --machines FILE`). A module may export machines one by one, as an
 * array, as a record or as a Map; every exported value that is a defined machine is collected.
 *
 * @example
 * ```ts
 * import { loadMachines } from "./machine_modules.ts";
 * const machines = await loadMachines(["tests/actors/runtime/_counter.ts"]);
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";
import type { AnyMachine } from "./replay.ts";

/** True when `v` is a machine made by `defineMachine`. */
export function isMachine(v: unknown): v is AnyMachine {
  if (typeof v !== "object" || v === null) return false;
  const m = v as Record<string, unknown>;
  return typeof m.name === "string" && typeof m.version === "number" && typeof m.apply === "function" &&
    typeof m.transition === "function" && Array.isArray(m.states);
}

/** Every machine exported by `module` (directly, or inside an exported array, record or Map), by name. */
export function collectMachines(module: Record<string, unknown>): AnyMachine[] {
  const found = new Map<string, AnyMachine>();
  const add = (m: AnyMachine) => {
    const seen = found.get(m.name);
    if (seen !== undefined && seen !== m && seen.version !== m.version) {
      throw new ProtocolError(
        "bad_request",
        `Cannot collect machines: ${m.name} is exported as version ${seen.version} and ${m.version}`,
      );
    }
    found.set(m.name, m);
  };
  for (const value of Object.values(module)) {
    if (isMachine(value)) add(value);
    else if (Array.isArray(value)) value.filter(isMachine).forEach(add);
    else if (value instanceof Map) [...value.values()].filter(isMachine).forEach(add);
    else if (typeof value === "object" && value !== null) Object.values(value).filter(isMachine).forEach(add);
  }
  return [...found.values()];
}

/** Imports each module (a path relative to the working directory, or a URL) and collects its machines. */
export async function loadMachines(specifiers: readonly string[]): Promise<AnyMachine[]> {
  const out: AnyMachine[] = [];
  for (const spec of specifiers) {
    const url = /^[a-z]+:/.test(spec) ? spec : new URL(spec, `file://${Deno.cwd()}/`).href;
    let module: Record<string, unknown>;
    try {
      module = await import(url);
    } catch (e) {
      throw new ProtocolError("not_found", `Cannot load machines from ${spec}: ${(e as Error).message}`);
    }
    const machines = collectMachines(module);
    if (machines.length === 0) {
      throw new ProtocolError("not_found", `Cannot load machines from ${spec}: it exports no machine`);
    }
    out.push(...machines);
  }
  return out;
}
