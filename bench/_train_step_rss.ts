/**
 * Run by `model_bench.ts` as its own process: loads SmolLM2 from the GGUF given as the first argument, runs
 * one 3-stage SGD step (B=1, T=64) on the kernel threads NEURO_THREADS sets, and prints one JSON line with
 * the peak resident memory (Linux VmHWM, MB) after loading and after the step, so the step's peak is measured
 * without the garbage of earlier benchmark iterations. With a step count as the second argument it runs that
 * many steps back to back, each on the previous step's candidate (as a worker's actor does), and prints one
 * line per step, with the resident memory (VmRSS, MB) after it: what one long-lived process keeps.
 */
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { type Manifest, manifestOf } from "../kernels/manifest.ts";
import { componentParameters, type Model } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { trainStep } from "../kernels/step.ts";

function statusMb(field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(Deno.readTextFileSync("/proc/self/status"));
  return m ? Number(m[1]) / 1024 : NaN;
}

let model: Model = modelFromGguf(readGguf(await Deno.readFile(Deno.args[0]!)));
const steps = Number(Deno.args[1] ?? 1);
const c = model.config;
const loaded = statusMb("VmHWM");
const block = componentParameters(c, "block_000");
const stage0 = componentParameters(c, "embed") + componentParameters(c, "norm") + 10 * block;
const partitions = place(c, [stage0, 10 * block, 10 * block]);
let manifest: Manifest = manifestOf(model, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
const ids = Array.from({ length: 64 }, (_, t) => (t * 977 + 13) % c.vocab_size);
for (let step = 0; step < steps; step++) {
  const t0 = performance.now();
  const out = trainStep({
    model,
    manifest,
    batch: { input_ids: [ids], labels: [[...ids.slice(1), -100]] },
    partitions,
    learningRate: 1e-4,
    clip: 1,
    step,
  });
  const seconds = (performance.now() - t0) / 1000;
  model = out.candidate;
  manifest = out.candidateManifest;
  const line = { loaded, peak: statusMb("VmHWM"), seconds, record: out.recordRoot };
  console.log(JSON.stringify(steps === 1 ? line : { step, ...line, rss: statusMb("VmRSS") }));
}
