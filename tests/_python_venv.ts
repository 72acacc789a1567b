/**
 * Python oracles for tests: a venv under `.cache/<name>` with pinned packages, created with pip on first use
 * and reused after. When Python, venv or pip cannot be used, `skip` says why, and the tests that need the
 * oracle report themselves ignored with that reason (never passed).
 *
 * @example
 * ```ts
 * import { pythonVenv } from "./_python_venv.ts";
 * const oracle = await pythonVenv("venv-parquet", ["pyarrow==26.0.1"]);
 * Deno.test({ name: "...", ignore: oracle.skip !== null, fn: async () => { await oracle.python(script, input); } });
 * ```
 */

/** A prepared venv, or why it cannot be used. */
export interface PythonOracle {
  /** Why the oracle cannot run, or null when it can. */
  readonly skip: string | null;
  /** The venv's python. */
  readonly path: string;
  /** Runs `script` with `argv[1]` = a JSON file holding `input`; returns the JSON it wrote to `argv[2]`. */
  python(script: string, input: unknown): Promise<unknown>;
}

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    const d = new TextDecoder();
    return {
      ok: o.success,
      out: (d.decode(o.stdout) + d.decode(o.stderr)).trim().split("\n").slice(-3).join(" | "),
    };
  } catch (e) {
    return { ok: false, out: (e as Error).message };
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Creates (once) the venv `.cache/<name>` with `pins` installed and returns it. */
export async function pythonVenv(name: string, pins: readonly string[]): Promise<PythonOracle> {
  const venv = new URL(`../.cache/${name}/`, import.meta.url).pathname;
  const path = `${venv}bin/python`;
  const ready = `${venv}.ready-${pins.join("-")}`;
  const prepare = async (): Promise<string | null> => {
    if (await exists(ready)) return null;
    const python = (await run("python3", ["--version"])).ok ? "python3" : "python";
    const made = await run(python, ["-m", "venv", venv]);
    if (!made.ok) return `cannot create a Python venv at ${venv}: ${made.out}`;
    const pip = await run(path, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...pins]);
    if (!pip.ok) return `pip cannot install ${pins.join(" ")} (registry unreachable?): ${pip.out}`;
    await Deno.writeTextFile(ready, new Date(0).toISOString());
    return null;
  };
  const skip = await prepare();
  return {
    skip,
    path,
    async python(script: string, input: unknown): Promise<unknown> {
      const dir = await Deno.makeTempDir({ prefix: "oracle-" });
      try {
        await Deno.writeTextFile(`${dir}/in.json`, JSON.stringify(input));
        await Deno.writeTextFile(`${dir}/script.py`, script);
        const o = await new Deno.Command(path, {
          args: [`${dir}/script.py`, `${dir}/in.json`, `${dir}/out.json`],
          stdout: "piped",
          stderr: "piped",
        }).output();
        if (!o.success) throw new Error(`Python oracle failed: ${new TextDecoder().decode(o.stderr)}`);
        return JSON.parse(await Deno.readTextFile(`${dir}/out.json`));
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  };
}
