import assert from "node:assert/strict";

/**
 * Runs `script` (TypeScript) in a fresh `deno eval` process, from the working directory, and returns what it
 * printed; fails the test, with the process's standard error, unless it exits 0.
 */
export async function evalScript(script: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}
