/**
 * What every task shares: strict argument parsing with `--help`, and one way to report failure. Errors
 * print one line to stderr (`error: <message>`) and exit 2 for usage mistakes, 1 for everything else.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ProtocolError } from "../core/errors.ts";

/** A mistake in how the task was called: the message is followed by a hint to use --help. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Parses `args` strictly; unknown options and missing values are usage errors. */
export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(
  args: string[],
  options: O,
): {
  values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>["values"];
  positionals: string[];
} {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values, positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** Runs a task's main function, mapping errors to a one-line message and an exit code. */
export async function runTask(name: string, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`error: ${e.message}\nRun \`deno task ${name} --help\` for usage.`);
      Deno.exit(2);
    }
    if (e instanceof ProtocolError) {
      console.error(`error: ${e.message} (${e.code})`);
      Deno.exit(1);
    }
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
    Deno.exit(1);
  }
}

/** The value of a required option, or a usage error naming it. */
export function required(value: string | undefined, option: string): string {
  if (value === undefined || value === "") throw new UsageError(`--${option} is required`);
  return value;
}

/**
 * An integer option from `min` to `max` (decimal digits only, so "1e3", "1.0" and " 5" are refused), or
 * `fallback` when it was not given. A usage error names the option and the value otherwise.
 */
export function integerOption(
  value: string | undefined,
  option: string,
  { fallback, min = 1, max = Number.MAX_SAFE_INTEGER }: { fallback?: number; min?: number; max?: number } =
    {},
): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`--${option} is required`);
    return fallback;
  }
  const n = /^-?[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max < Number.MAX_SAFE_INTEGER
      ? `an integer from ${min} to ${max}`
      : min === 1
      ? "a positive integer"
      : `an integer of at least ${min}`;
    throw new UsageError(`--${option} is ${value}, expected ${range}`);
  }
  return n;
}
