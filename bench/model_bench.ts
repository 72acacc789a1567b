/**
 * The real seed model (SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32) in our deterministic kernels
 * against llama.cpp (node-llama-cpp 3.21.1 under Node, one thread, on the same GGUF): prompt-processing and
 * generation tokens per second, and the time and peak memory of one full training step split over three
 * stages. Needs `deno task model:fetch-smollm2` first (skipped with a message otherwise); the llama.cpp column
 * needs Node ≥ 20 and the npm registry once. Run: `deno bench --allow-all bench/model_bench.ts`.
 *
 * Generation is greedy with the kernels' KV cache (`decode` one token at a time after the prompt), as
 * llama.cpp's is.
 */
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../kernels/gguf_tokenizer.ts";
import { headLogits } from "../kernels/head.ts";
import { decode, KvCache } from "../kernels/generation.ts";
import { argmax } from "../kernels/cross_entropy.ts";
import { buildManifest } from "../kernels/manifest.ts";
import { componentNames, componentParameters, type Model } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { rotaryTables } from "../kernels/rotary.ts";
import { stageForward } from "../kernels/stage.ts";
import { trainStep } from "../kernels/step.ts";
import { Tokenizer } from "@huggingface/tokenizers";
import { llamaThroughput } from "../tests/model/oracle/oracle.ts";

const PATH = new URL("../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url)
  .pathname;
const TEXT =
  "The history of mathematics spans thousands of years. Early civilizations in Mesopotamia and Egypt " +
  "developed arithmetic and geometry to measure land, track the seasons and keep accounts. Greek thinkers such " +
  "as Euclid and Archimedes turned these practical methods into a science of proof, and scholars in India, " +
  "China and the Islamic world later added zero, algebra and much more.";
const T = 64;
const GENERATED = 16;

/** Peak resident memory of this process so far (Linux VmHWM), in MB, or NaN elsewhere. */
function peakRssMb(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(
      Deno.readTextFileSync("/proc/self/status"),
    );
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The last position's logits after a forward over `ids` (what generating one token costs without a cache). */
function nextLogits(m: Model, ids: readonly number[]): Float32Array {
  const c = m.config, n = ids.length, C = c.hidden_size;
  const tables = rotaryTables(n, C / c.num_attention_heads, c.rope_theta);
  const shape = { config: c, B: 1, T: n, ids: Int32Array.from(ids), tables };
  const { output } = stageForward(shape, componentNames(c), m.components, null);
  return headLogits(
    output.subarray((n - 1) * C),
    m.components.norm!,
    m.components.embed!,
    c,
    1,
  );
}

const present = await Deno.stat(PATH).then(() => true, () => false);
if (!present) {
  console.log(
    `model_bench skipped: ${PATH} is missing; run \`deno task model:fetch-smollm2\` first`,
  );
} else {
  const file = readGguf(await Deno.readFile(PATH));
  const model = modelFromGguf(file);
  const tok = tokenizerFromGguf(file);
  const ids = new Tokenizer(tok.tokenizer, {}).encode(TEXT).ids.slice(0, T);
  const c = model.config;

  // Three stages: stage 0 takes embed, norm and some blocks; the blocks are split about evenly.
  const blockParams = componentParameters(c, "block_000");
  const stage0 = componentParameters(c, "embed") +
    componentParameters(c, "norm") + 10 * blockParams;
  const partitions = place(c, [stage0, 10 * blockParams, 10 * blockParams]);
  const roots = Object.fromEntries(
    componentNames(c).map((n, i) => [n, i.toString(16).padStart(64, "0")]),
  );
  const manifest = buildManifest(c, roots, {
    origin: { format: "gguf" },
    tokenizer_root: "0".repeat(64),
  });
  const batch = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };

  const llama = await llamaThroughput(PATH); // measured now, next to ours
  const oursPrompt = { seconds: Infinity };
  const oursNext = { seconds: Infinity };
  const step = { seconds: Infinity, peak: NaN, loss: NaN };

  Deno.bench(`ours: prompt processing, ${T} tokens`, {
    group: "smollm2",
    n: 3,
    warmup: 1,
  }, () => {
    const t0 = performance.now();
    nextLogits(model, ids);
    oursPrompt.seconds = Math.min(
      oursPrompt.seconds,
      (performance.now() - t0) / 1000,
    );
  });
  Deno.bench(`ours: ${GENERATED} tokens generated after ${T} (KV cache)`, {
    group: "smollm2",
    n: 3,
    warmup: 1,
  }, () => {
    const V = c.vocab_size;
    const tables = rotaryTables(
      T + GENERATED,
      c.hidden_size / c.num_attention_heads,
      c.rope_theta,
    );
    const cache = new KvCache(c);
    let logits = decode(model, cache, ids, tables);
    const t0 = performance.now();
    for (let i = 0; i < GENERATED; i++) {
      const next = argmax(logits.subarray(logits.length - V), 1, V)[0]!;
      logits = decode(model, cache, [next], tables);
    }
    oursNext.seconds = Math.min(
      oursNext.seconds,
      (performance.now() - t0) / 1000 / GENERATED,
    );
  });
  Deno.bench(
    `ours: one training step, 3 stages, B=1 T=${T}`,
    { group: "smollm2-train", n: 2, warmup: 0 },
    () => {
      const t0 = performance.now();
      const out = trainStep({
        model,
        manifest,
        batch,
        partitions,
        learningRate: 1e-4,
        clip: 1,
        step: 0,
      });
      step.seconds = Math.min(step.seconds, (performance.now() - t0) / 1000);
      step.loss = out.loss;
      step.peak = peakRssMb();
    },
  );

  globalThis.addEventListener("unload", () => {
    const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "n/a");
    const theirs = llama.throughput;
    console.log(`\nSmolLM2-135M-Instruct Q4_1, one thread, ${T}-token prompt`);
    console.log(`| measure | our kernels (float32, deterministic) | llama.cpp (node-llama-cpp 3.21.1) |`);
    console.log(`|---|---|---|`);
    const pp = f(theirs?.prompt_tokens_per_second ?? NaN);
    console.log(`| prompt processing (tokens/s) | ${f(T / oursPrompt.seconds)} | ${pp} |`);
    const tg = f(theirs?.generate_tokens_per_second ?? NaN);
    console.log(`| generation (tokens/s) | ${f(1 / oursNext.seconds)} | ${tg} |`);
    const train = `${f(step.seconds)} s, peak RSS ${f(step.peak)} MB, loss ${f(step.loss)}`;
    console.log(`| training step, 3 stages, B=1 T=${T} | ${train} | — |`);
    if (theirs === null) console.log(`llama.cpp column missing: ${llama.reason}`);
  });
}
