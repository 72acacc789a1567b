/**
 * Test hooks (`NEURO_CRASH_AT`, `NEURO_TEST_DIVERGENT_FEE`, `NEURO_TEST_PAUSE_BEFORE_COMMIT`,
 * `NEURO_TEST_PERTURB_KERNEL`) are environment variables honoured only by a process explicitly started with
 * permission to read them (`--allow-env=<name>` or `-A`, as the tests start their processes). No `deno task`
 * grants them, so a production task that merely has the variable in its environment ignores it, and asking
 * never shows a permission prompt.
 *
 * @example
 * ```ts
 * const fee = testHook("NEURO_TEST_DIVERGENT_FEE"); // undefined unless the process may read it
 * ```
 */

/** The value of test hook `name`, or undefined when unset or when this process may not read it. */
export function testHook(name: string): string | undefined {
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") return undefined;
  return Deno.env.get(name);
}
