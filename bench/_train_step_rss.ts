/**
 * Run by `model_bench.ts` as its own process: loads SmolLM2 from the GGUF given as the first argument, runs
 * one 3-stage SGD step (B=1, T=64) on the kernel threads NEURO_THREADS sets, and prints one JSON line with the
 * peak resident memory (Linux VmHWM, MB) after loading and after the step, so the step's peak is measured
 * without the garbage of earlier benchmark iterations.
 */
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { manifestOf } from "../kernels/manifest.ts";
import { componentParameters } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { trainStep } from "../kernels/step.ts";

function peakMb(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(Deno.readTextFileSync("/proc/self/status"));
  return m ? Number(m[1]) / 1024 : NaN;
}

const model = modelFromGguf(readGguf(await Deno.readFile(Deno.args[0]!)));
const c = model.config;
const loaded = peakMb();
const block = componentParameters(c, "block_000");
const stage0 = componentParameters(c, "embed") + componentParameters(c, "norm") + 10 * block;
const partitions = place(c, [stage0, 10 * block, 10 * block]);
const manifest = manifestOf(model, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
const ids = Array.from({ length: 64 }, (_, t) => (t * 977 + 13) % c.vocab_size);
const t0 = performance.now();
const out = trainStep({
  model,
  manifest,
  batch: { input_ids: [ids], labels: [[...ids.slice(1), -100]] },
  partitions,
  learningRate: 1e-4,
  clip: 1,
  step: 0,
});
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ loaded, peak: peakMb(), seconds, record: out.recordRoot }));
