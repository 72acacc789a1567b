/**
 * `deno task devnet --model smollm2`: builds the SmolLM2 devnet from the fetched GGUF if needed
 * (`genesis/devnet/smollm2_build.ts`), runs its scenario (`devnet/smollm2_scenario.ts`) and prints the
 * report beside the reference's figures. Called by `tasks/devnet.ts`, which owns the flags.
 */
import { Supervisor } from "../devnet/supervisor.ts";
import { RunAbort } from "../devnet/run_abort.ts";
import { ensureSmollm2Devnet } from "../genesis/devnet/smollm2_build.ts";
import { runSmollm2Scenario } from "../devnet/smollm2_scenario.ts";
import { formatSmollm2Report } from "../devnet/smollm2_report.ts";
import pin from "../genesis/pins/smollm2.json" with { type: "json" };

/** The default GGUF path (where `deno task model:fetch-smollm2` writes it). */
export const SMOLLM2_GGUF = `.cache/models/${pin.gguf_file}`;

/** Runs the SmolLM2 devnet in `dir`; returns the exit signal when stopped by one. */
export async function runSmollm2Devnet(options: {
  dir: string;
  gguf: string;
  json: boolean;
  say: (line: string) => void;
}): Promise<Deno.Signal | null> {
  const { dir, say } = options;
  const present = await Deno.stat(options.gguf).then(() => true, () => false);
  const built = await Deno.stat(`${dir}/genesis.json`).then(() => true, () => false);
  if (!present && !built) {
    throw new Error(
      `Cannot build the SmolLM2 devnet: ${options.gguf} is missing (run deno task model:fetch-smollm2 first)`,
    );
  }
  const layout = await ensureSmollm2Devnet({ dir, gguf: options.gguf }, say);
  say(
    `${layout.built ? "built" : "using"} the SmolLM2 devnet at ${layout.dir} (genesis ${layout.genesisId})`,
  );
  const sup = await Supervisor.open(layout.dir);
  const stop = new RunAbort(sup, say);
  say(`logs in ${sup.logs}/`);
  try {
    // A signal stops the run at once, whatever it awaits (the report's reads included).
    const stopped = new Promise<never>((_, fail) =>
      stop.signal.addEventListener("abort", () => fail(stop.signal.reason), { once: true })
    );
    const run = runSmollm2Scenario(sup, layout, { say, signal: stop.signal });
    run.catch(() => {});
    const report = await Promise.race([run, stopped]);
    console.log(options.json ? JSON.stringify(report) : formatSmollm2Report(report));
  } catch (e) {
    if (stop.signalled === null) throw e;
  } finally {
    await sup.stopAll();
    await sup.close();
    stop.dispose();
  }
  if (stop.signalled) {
    say(`stopped by ${stop.signalled}; every process was stopped; run the same command again to resume`);
  }
  return stop.signalled;
}
