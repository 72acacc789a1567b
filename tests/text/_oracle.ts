/**
 * The Python oracle for the text tests: a venv under `.cache/venv-text` with pinned `tokenizers` and `jinja2`,
 * created with pip on first use and reused after. When Python, venv or pip cannot be used, `oracleSkip` says
 * why and the oracle tests are ignored (never passed).
 */
export const VENV = new URL("../../.cache/venv-text/", import.meta.url).pathname;
export const PYTHON = `${VENV}bin/python`;
const PINS = ["tokenizers==0.23.3", "jinja2==3.1.6"];
const READY = `${VENV}.ready-${PINS.join("-")}`;

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

/** Creates the venv if needed; returns why the oracle cannot run, or null when it can. */
async function prepare(): Promise<string | null> {
  if (await exists(READY)) return null;
  const python = (await run("python3", ["--version"])).ok ? "python3" : "python";
  const venv = await run(python, ["-m", "venv", VENV]);
  if (!venv.ok) return `cannot create a Python venv at ${VENV}: ${venv.out}`;
  const pip = await run(`${VENV}bin/python`, [
    "-m",
    "pip",
    "install",
    "--quiet",
    "--disable-pip-version-check",
    ...PINS,
  ]);
  if (!pip.ok) return `pip cannot install ${PINS.join(" ")} (registry unreachable?): ${pip.out}`;
  await Deno.writeTextFile(READY, new Date(0).toISOString());
  return null;
}

/** Why the oracle tests are ignored, or null when the oracle is ready. */
export const oracleSkip: string | null = await prepare();
if (oracleSkip !== null) console.log(`Python oracle tests ignored: ${oracleSkip}`);

/** Runs a Python script in the venv with JSON in and JSON out. */
export async function python(script: string, input: unknown): Promise<unknown> {
  const dir = await Deno.makeTempDir({ prefix: "oracle-" });
  try {
    await Deno.writeTextFile(`${dir}/in.json`, JSON.stringify(input));
    await Deno.writeTextFile(`${dir}/script.py`, script);
    const o = await new Deno.Command(PYTHON, {
      args: [`${dir}/script.py`, `${dir}/in.json`, `${dir}/out.json`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!o.success) throw new Error(`Python oracle failed: ${new TextDecoder().decode(o.stderr)}`);
    return JSON.parse(await Deno.readTextFile(`${dir}/out.json`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
