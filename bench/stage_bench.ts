/**
 * A worker's stage of a SmolLM2-135M training step (3 stages, B=1, T=64): peak resident memory of the
 * worker's path (`openStage`: gradients in their files' buffers, caches consumed, the update in place, the
 * parameters viewing the component files) against the same phases with no memory savings (the pure stage
 * functions with separate gradient, update and serialized buffers: what `openStage` did before), each stage in
 * a fresh process (`_stage_rss.ts`) so the figure is that process's own peak (Linux VmHWM). Every run checks
 * that its outputs' roots equal the in-process training step's. Needs `deno task model:fetch-smollm2`
 * first (skipped with a message otherwise). Run: `deno bench --allow-all bench/stage_bench.ts`.
 * @module
 */

const ROOT = new URL("../", import.meta.url).pathname;
const PATH = `${ROOT}.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf`;
const DIR = `${ROOT}.cache/bench_stage`;
const SCRIPT = new URL("./_stage_rss.ts", import.meta.url).pathname;
const MODES = ["copying", "saving"] as const;

interface Run {
  readonly stage: number;
  readonly mode: string;
  readonly base: number;
  readonly peak: number;
  readonly seconds: number;
  readonly same: boolean;
}

async function deno(args: string[], threads: number): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", ...args], // reading /proc/self/status needs --allow-all under Deno 2.9
    env: { NEURO_THREADS: String(threads) },
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`Cannot run ${args.join(" ")}: exit code ${out.code}`);
  return new TextDecoder().decode(out.stdout);
}

function load(): string {
  try {
    return Deno.loadavg()[0]!.toFixed(2);
  } catch {
    return "?";
  }
}

const present = await Deno.stat(PATH).then(() => true, () => false);
if (!present) {
  console.log(`stage_bench skipped: ${PATH} is missing; run \`deno task model:fetch-smollm2\` first`);
} else {
  const loadAtStart = load();
  await deno([SCRIPT, "prepare", PATH, DIR], 1);
  const runs: Run[] = [];
  for (const stage of [0, 1]) {
    for (const mode of MODES) {
      Deno.bench(`worker stage ${stage}, ${mode}`, { group: `stage${stage}`, n: 1, warmup: 0 }, async () => {
        runs.push(JSON.parse(await deno([SCRIPT, "run", DIR, String(stage), mode], 1)));
      });
    }
  }
  globalThis.addEventListener("unload", () => {
    const f = (x: number) => x.toFixed(0);
    console.log(`\nSmolLM2-135M worker stage (B=1, T=64, 1 thread), peak RSS of a fresh process`);
    console.log(`| stage | no savings (MB) | worker's openStage (MB) | saving / none | roots equal |`);
    console.log(`|---|---|---|---|---|`);
    for (const stage of [0, 1]) {
      const [none, saving] = MODES.map((m) => runs.find((r) => r.stage === stage && r.mode === m));
      if (!none || !saving) continue;
      console.log(
        `| ${stage === 0 ? "0 (embed, norm, 10 blocks)" : "1 (10 blocks)"} | ${f(none.peak)} | ${
          f(saving.peak)
        } | ${(saving.peak / none.peak).toFixed(2)} | ${none.same && saving.same} |`,
      );
    }
    console.log(`1-minute load average ${loadAtStart} at start, ${load()} at end`);
  });
}
