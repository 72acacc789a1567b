/**
 * The real seed model (SmolLM2-135M-Instruct, Q4_1 GGUF dequantised to float32) in our deterministic kernels
 * against llama.cpp (node-llama-cpp 3.21.1 under Node, one thread, on the same GGUF): prompt-processing and
 * generation tokens per second, and the time and peak memory of one full training step split over three
 * stages. Needs `deno task model:fetch-smollm2` first (skipped with a message otherwise); the llama.cpp column
 * needs Node ≥ 20 and the npm registry once. Run: `deno bench --allow-all bench/model_bench.ts`.
 *
 * The peer is measured fairly: llama.cpp stays loaded and warmed up beside us for the whole run
 * (`tests/model/oracle/llama_peer.ts`) in its best single-thread configuration here (its default F16 KV
 * cache; its own greedy loop), and one of its samples is taken right before each of ours, so both see the
 * same machine at the same moment. A second llama.cpp context on two threads takes a generation sample before
 * each of our two-thread ones, for the rows at equal thread counts. The prompt and generation figures, ours
 * and the peer's, are the medians of their samples (the warm-up call included: one in six); the
 * draft-and-verify and training-step rows stay the best of their runs. The CPU build of ggml that
 * node-llama-cpp chose (its prebuilt binaries pick one per CPU at run time) is printed: it is the main reason
 * the peer's figures differ between machines.
 *
 * Prompt processing is the prompt's ids fed into a fresh KV cache in one `decode`, the head only for the last
 * position, as `deno task generate` does. Before December 2026 it was the training stage's forward, which also
 * keeps every block's backward caches; that measure stays as the row "prompt processing by the training
 * forward", so figures stay comparable across the change. Generation is greedy with the kernels' KV cache
 * (`decode` one token at a time after the prompt), as llama.cpp's is, on the float32 weights as `deno task
 * generate` reads them (resident, prepacked, and since December 2026 each one-row product on the weights' code
 * panels, `kernels/wasm/code_panels.ts`: the same bits from 1.25 bytes a weight; the row "KV cache, float32
 * panels, no code panels" decodes a second copy of the model without them, as before; and, when every block
 * has code panels, each token through every block on the kernels' memory, `kernels/decode_fast.ts`, the
 * cache in a reusable block of it that each sample releases). The first rows are on one kernel thread, as before, so figures
 * stay comparable across changes; then the same on two threads (`NEURO_THREADS` never changes a bit; the
 * generation row also counts the calls that found a kernel worker asleep, each a wake-up of tens of
 * microseconds, which a worker polling between one token's calls avoids: `kernels/wasm/pool.ts`), greedy
 * generation by the exact pruned head (`kernels/head_argmax.ts`: the same ids from few of the head's logits, as
 * `deno task generate` and the Provider choose them, with the logits it computed per token),
 * generation with draft-and-verify (`kernels/draft_verify.ts`, the int8 drafter; the same tokens, with its acceptance rate),
 * the same with the onnxruntime drafter (`kernels/ort_draft.ts`, 8-bit `MatMulNBits`, on as many onnxruntime
 * threads as kernel threads) choosing ids by the exact pruned head and drafting 4 tokens a pass, as `deno task
 * generate --draft 4` does,
 * the training step on two threads, and the step's time and peak RSS in fresh processes, two per thread count
 * alternating 1 and 2 threads (`_train_step_rss.ts`; the time's last column is the 2-thread speed-up, as the
 * steps/s row's; the in-process rows run after the generation rows, beside their resident copy and drafter).
 * When `.cache/venv-torch` (built by the slow suite's torch parity test) can import torch, the same training
 * step shape is also timed in PyTorch with the reference profile (1 thread, ATEN_CPU_CAPABILITY=default,
 * MKL_ENABLE_INSTRUCTIONS=SSE4_2) and the ratio printed. The 1-minute load average is printed beside the
 * figures: on a shared machine, compare ratios within one run.
 */
import { makeModelResident, SHARED_INPUTS } from "../kernels/block.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../kernels/gguf_tokenizer.ts";
import { decode, decodeTokens, generate, KvCache } from "../kernels/generation.ts";
import { HEAD_ARGMAX_STATS } from "../kernels/head_argmax.ts";
import { Q8Drafter } from "../kernels/draft.ts";
import { type DraftOptions, generateDrafted } from "../kernels/draft_verify.ts";
import { OrtDrafter } from "../kernels/ort_draft.ts";
import { setKernelThreads } from "../kernels/threads.ts";
import { codedB, makeResident, wasmMatmulThreadsReady } from "../kernels/wasm/matmul_wasm.ts";
import { kernelMemory } from "../kernels/wasm/kernel_memory.ts";
import { argmax } from "../kernels/cross_entropy.ts";
import { manifestOf } from "../kernels/manifest.ts";
import { componentNames, componentParameters, type Model } from "../kernels/model.ts";
import { headLogits } from "../kernels/head.ts";
import { place } from "../kernels/placement.ts";
import { rotaryTables } from "../kernels/rotary.ts";
import { stageForward } from "../kernels/stage.ts";
import { trainStep } from "../kernels/step.ts";
import { Tokenizer } from "@huggingface/tokenizers";
import { startLlamaPeer } from "../tests/model/oracle/llama_peer.ts";

const PATH = new URL("../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url)
  .pathname;
const TEXT =
  "The history of mathematics spans thousands of years. Early civilizations in Mesopotamia and Egypt " +
  "developed arithmetic and geometry to measure land, track the seasons and keep accounts. Greek thinkers such " +
  "as Euclid and Archimedes turned these practical methods into a science of proof, and scholars in India, " +
  "China and the Islamic world later added zero, algebra and much more.";
const T = 64;
const GENERATED = 16;

/** The median of samples (NaN for none). */
function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b), h = s.length >> 1;
  return s.length % 2 === 1 ? s[h]! : (s[h - 1]! + s[h]!) / 2;
}

/** "min … max" of samples, one decimal. */
function spread(xs: readonly number[]): string {
  return xs.length === 0 ? "none" : `${Math.min(...xs).toFixed(1)} … ${Math.max(...xs).toFixed(1)}`;
}

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

/**
 * The next token's logits after the prompt `ids`, as `deno task generate` computes them: the ids fed into a
 * fresh KV cache in one `decode` (every position through every block, keys and values kept), the head only
 * for the last position (what llama.cpp's prompt processing also does).
 */
function nextLogits(m: Model, ids: readonly number[]): Float32Array {
  const c = m.config;
  const tables = rotaryTables(ids.length, c.hidden_size / c.num_attention_heads, c.rope_theta);
  const cache = new KvCache(c);
  try {
    return decode(m, cache, ids, tables, true);
  } finally {
    cache.release(); // its block is reused by the next sample
  }
}

/**
 * The same logits by the training stage's forward (which also keeps every block's backward caches) and the head
 * for the last position: what the prompt row measured before December 2026, kept as its own row so that the
 * figures stay comparable across that change.
 */
function forwardLogits(m: Model, ids: readonly number[]): Float32Array {
  const c = m.config, n = ids.length, C = c.hidden_size;
  const tables = rotaryTables(n, C / c.num_attention_heads, c.rope_theta);
  const shape = { config: c, B: 1, T: n, ids: Int32Array.from(ids), tables };
  const { output } = stageForward(shape, componentNames(c), m.components, null);
  return headLogits(output.subarray((n - 1) * C), m.components.norm!, m.components.embed!, c, 1);
}

const present = await Deno.stat(PATH).then(() => true, () => false);
if (!present) {
  console.log(
    `model_bench skipped: ${PATH} is missing; run \`deno task model:fetch-smollm2\` first`,
  );
} else {
  const file = readGguf(await Deno.readFile(PATH));
  const model = modelFromGguf(file);
  // As deno task generate does: weights read in place by every matmul, prepacked for the linear layers, and
  // decoded one token at a time from their code panels (every matrix of this Q4_1/Q8_0 file has them).
  const residentBytes = makeModelResident(model.components);
  const matrices = Object.values(model.components).flatMap((t) => Object.values(t)).filter((t) =>
    t.shape.length === 2
  );
  const coded = matrices.filter((t) => codedB(t.data, t.shape[1]!, t.shape[0]!) !== null).length;
  // The same weights without code panels (each token reads the float32 panels), for the row that shows what
  // the code panels change in this run: made after the training rows (their peak RSS stays comparable).
  let plain: Model | null = null;
  const plainModel = () => {
    if (plain === null) {
      plain = modelFromGguf(file);
      makeResident(plain.components, { together: SHARED_INPUTS, codes: false });
    }
    return plain;
  };
  const tok = tokenizerFromGguf(file);
  const ids = new Tokenizer(tok.tokenizer, {}).encode(TEXT).ids.slice(0, T);
  const c = model.config;

  // Three stages: stage 0 takes embed, norm and some blocks; the blocks are split about evenly.
  const blockParams = componentParameters(c, "block_000");
  const stage0 = componentParameters(c, "embed") +
    componentParameters(c, "norm") + 10 * blockParams;
  const partitions = place(c, [stage0, 10 * blockParams, 10 * blockParams]);
  const manifest = manifestOf(model, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
  const batch = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };

  // llama.cpp kept running beside us, warmed up: one of its samples is taken right before each of ours.
  const llama = await startLlamaPeer(PATH);
  const peer = llama.peer;
  const peerPrompt: number[] = [], peerGenerate: number[] = []; // seconds per sample
  const peerGenerate2: number[] = []; // the same on llama.cpp's two-thread context
  const threadsReady = await wasmMatmulThreadsReady(2);
  const load = () => {
    try {
      return Deno.loadavg()[0]!.toFixed(2);
    } catch {
      return "?";
    }
  };
  const loadAtStart = load();
  const THREADS = [1, 2] as const;
  const oursPrompt = THREADS.map((): number[] => []); // seconds per sample
  const oursNext = THREADS.map((): number[] => []); // seconds per token, per sample
  const plainNext = THREADS.map((): number[] => []); // the same, on the float32 panels (no code panels)
  const wakeUps = THREADS.map(() => 0); // calls that found a kernel worker asleep, over every generated token
  const oursForward: number[] = []; // seconds per sample, one thread, the training forward (forwardLogits)
  const drafted = THREADS.map(() => ({ seconds: Infinity, accepted: 0, drafted: 0 }));
  const step = THREADS.map(() => ({ seconds: Infinity, peak: NaN, loss: NaN }));
  const drafter = new Q8Drafter(model);
  const ortDrafters = await Promise.all(
    THREADS.map((threads) => OrtDrafter.create(model, { threads }).catch((e: Error) => e)),
  );
  const ortDrafted = THREADS.map(() => ({ seconds: Infinity, accepted: 0, drafted: 0 }));
  const ORT_K = 4;
  let greedy: string | undefined; // the greedy ids the onnxruntime rows must reproduce
  const DRAFTED = 32;
  const pruned = THREADS.map((): number[] => []); // seconds per token, per sample, by the exact pruned head
  const candidates = THREADS.map(() => 0), wholeRows = THREADS.map(() => 0);

  for (const [ti, threads] of THREADS.entries()) {
    const suffix = threads === 1 ? "" : `, ${threads} threads`;
    Deno.bench(`ours: prompt processing, ${T} tokens${suffix}`, {
      group: "smollm2",
      n: 5,
      warmup: 1,
    }, async (b) => {
      if (peer !== null) peerPrompt.push(await peer.prompt());
      setKernelThreads(threads);
      b.start();
      const t0 = performance.now();
      nextLogits(model, ids);
      oursPrompt[ti]!.push((performance.now() - t0) / 1000);
      b.end();
    });
    if (threads === 1) {
      Deno.bench(`ours: prompt processing by the training forward, ${T} tokens`, {
        group: "smollm2",
        n: 5,
        warmup: 1,
      }, (b) => {
        setKernelThreads(1);
        b.start();
        const t0 = performance.now();
        const logits = forwardLogits(model, ids);
        oursForward.push((performance.now() - t0) / 1000);
        b.end();
        // Both ways compute the same bits: the row measures the method, never a different answer.
        const direct = nextLogits(model, ids);
        if (!logits.every((x, i) => Object.is(x, direct[i]))) {
          throw new Error(
            "Cannot compare prompt methods: the training forward's logits differ from decode's",
          );
        }
      });
    }
    Deno.bench(`ours: ${GENERATED} tokens generated after ${T} (KV cache)${suffix}`, {
      group: "smollm2",
      n: 5,
      warmup: 1,
    }, async (b) => {
      if (peer !== null) peerGenerate.push(await peer.generate(GENERATED));
      if (peer !== null && threads === 2) peerGenerate2.push(await peer.generate(GENERATED, 2));
      b.start();
      setKernelThreads(threads);
      const V = c.vocab_size;
      const tables = rotaryTables(
        T + GENERATED,
        c.hidden_size / c.num_attention_heads,
        c.rope_theta,
      );
      const cache = new KvCache(c);
      let logits = decode(model, cache, ids, tables);
      const woken = kernelMemory()?.pool.wakeUps ?? 0;
      const t0 = performance.now();
      for (let i = 0; i < GENERATED; i++) {
        const next = argmax(logits.subarray(logits.length - V), 1, V)[0]!;
        logits = decode(model, cache, [next], tables);
      }
      oursNext[ti]!.push((performance.now() - t0) / 1000 / GENERATED);
      cache.release();
      wakeUps[ti]! += (kernelMemory()?.pool.wakeUps ?? 0) - woken;
      b.end();
    });
    Deno.bench(`ours: ${GENERATED} tokens generated after ${T} (tokens only, exact pruned head)${suffix}`, {
      group: "smollm2",
      n: 5,
      warmup: 1,
    }, () => {
      setKernelThreads(threads);
      const tables = rotaryTables(T + GENERATED, c.hidden_size / c.num_attention_heads, c.rope_theta);
      const cache = new KvCache(c), tokens: number[] = [];
      let next = decodeTokens(model, cache, ids, tables, true)[0]!;
      const before = { ...HEAD_ARGMAX_STATS };
      const t0 = performance.now();
      for (let i = 0; i < GENERATED; i++) {
        tokens.push(next);
        next = decodeTokens(model, cache, [next], tables)[0]!;
      }
      pruned[ti]!.push((performance.now() - t0) / 1000 / GENERATED);
      cache.release();
      candidates[ti]! += HEAD_ARGMAX_STATS.candidates - before.candidates;
      wholeRows[ti]! += HEAD_ARGMAX_STATS.whole - before.whole;
      // The same ids as the KV-cache row: the row measures the method, never a different answer.
      const want = generate(model, ids, GENERATED).tokens;
      if (tokens.join() !== want.join()) {
        throw new Error("Cannot compare generation methods: the pruned head chose other ids than argmax");
      }
    });
    // One draft-and-verify answer of DRAFTED tokens, timed from the prompt's own token (where generation
    // starts); each row keeps its best run.
    const timeDrafted = (best: typeof drafted, options: DraftOptions) => {
      setKernelThreads(threads);
      let first = 0;
      const out = generateDrafted(model, ids, DRAFTED + 1, {
        ...options,
        onToken: () => first ||= performance.now(),
      });
      const seconds = (performance.now() - first) / 1000 / DRAFTED;
      if (seconds < best[ti]!.seconds) {
        best[ti] = { seconds, accepted: out.stats.accepted, drafted: out.stats.drafted };
      }
      return out.tokens;
    };
    Deno.bench(`ours: ${DRAFTED} tokens generated after ${T} (draft-and-verify)${suffix}`, {
      group: "smollm2",
      n: 3,
      warmup: 1,
    }, () => void timeDrafted(drafted, { drafter }));
    const ortDrafter = ortDrafters[ti]!;
    if (!(ortDrafter instanceof Error)) {
      Deno.bench(`ours: ${DRAFTED} tokens generated after ${T} (draft-and-verify, onnxruntime)${suffix}`, {
        group: "smollm2",
        n: 3,
        warmup: 1,
      }, () => {
        const tokens = timeDrafted(ortDrafted, { drafter: ortDrafter, k: ORT_K, tokensOnly: true });
        // The same ids as greedy decoding: the row measures the method, never a different answer.
        greedy ??= generate(model, ids, DRAFTED + 1).tokens.join(); // once: it does not change
        if (tokens.join() !== greedy) {
          throw new Error("Cannot compare generation methods: draft-and-verify chose other ids than argmax");
        }
      });
    }
    Deno.bench(
      `ours: one training step, 3 stages, B=1 T=${T}${suffix}`,
      { group: "smollm2-train", n: 2, warmup: 0 },
      () => {
        setKernelThreads(threads);
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
        step[ti]!.seconds = Math.min(step[ti]!.seconds, (performance.now() - t0) / 1000);
        step[ti]!.loss = out.loss;
        step[ti]!.peak = peakRssMb();
      },
    );
  }

  for (const [ti, threads] of THREADS.entries()) {
    Deno.bench(
      `ours: ${GENERATED} tokens generated after ${T} (KV cache, float32 panels)${
        threads === 1 ? "" : `, ${threads} threads`
      }`,
      {
        group: "smollm2-float32", // its own group: Deno runs groups in order, so after the training rows
        n: 5,
        warmup: 1,
      },
      () => {
        setKernelThreads(threads);
        const plain = plainModel();
        const V = c.vocab_size;
        const tables = rotaryTables(T + GENERATED, c.hidden_size / c.num_attention_heads, c.rope_theta);
        const cache = new KvCache(c);
        let logits = decode(plain, cache, ids, tables);
        const t0 = performance.now();
        for (let i = 0; i < GENERATED; i++) {
          const next = argmax(logits.subarray(logits.length - V), 1, V)[0]!;
          logits = decode(plain, cache, [next], tables);
        }
        plainNext[ti]!.push((performance.now() - t0) / 1000 / GENERATED);
        cache.release();
      },
    );
  }

  // The step's own time and peak memory, each in a fresh process (no garbage from the iterations above, no
  // resident copy or drafter beside it): 1 and 2 threads alternate, so a drift
  // of the machine's speed reaches both alike, and each thread count keeps its best time and highest peak.
  const fresh: { threads: number; loaded: number; peak: number; seconds: number }[] = [];
  for (const threads of [...THREADS, ...THREADS]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all", // reading /proc/self/status needs --allow-all under Deno 2.9
        new URL("./_train_step_rss.ts", import.meta.url).pathname,
        PATH,
      ],
      env: { NEURO_THREADS: String(threads) },
      stdout: "piped",
      stderr: "inherit",
    }).output();
    if (!out.success) continue;
    const run = JSON.parse(new TextDecoder().decode(out.stdout));
    const seen = fresh.find((x) => x.threads === threads);
    if (seen === undefined) fresh.push({ threads, ...run });
    else {
      seen.seconds = Math.min(seen.seconds, run.seconds);
      seen.peak = Math.max(seen.peak, run.peak);
      seen.loaded = Math.max(seen.loaded, run.loaded);
    }
  }
  const torch = await torchStep();

  globalThis.addEventListener("unload", () => {
    const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "n/a");
    const r = (x: number, y: number) => (Number.isFinite(x / y) ? (x / y).toFixed(2) : "n/a");
    const pp = T / median(peerPrompt), tg = GENERATED / median(peerGenerate);
    const tg2 = GENERATED / median(peerGenerate2);
    const ours = (xs: number[][], per: number) => xs.map((x) => per / median(x));
    console.log(
      `\nSmolLM2-135M-Instruct Q4_1, one thread, ${T}-token prompt (prompt and generation: medians of interleaved samples)`,
    );
    console.log(`| measure | our kernels (float32, deterministic) | llama.cpp (node-llama-cpp 3.21.1) |`);
    console.log(`|---|---|---|`);
    console.log(`| prompt processing (tokens/s) | ${f(T / median(oursPrompt[0]!))} | ${f(pp)} |`);
    console.log(
      `| prompt processing by the training forward (tokens/s) | ${f(T / median(oursForward))} | ${f(pp)} |`,
    );
    console.log(`| generation (tokens/s) | ${f(1 / median(oursNext[0]!))} | ${f(tg)} |`);
    const train = `${f(step[0]!.seconds)} s, peak RSS ${f(step[0]!.peak)} MB, loss ${f(step[0]!.loss)}`;
    console.log(`| training step, 3 stages, B=1 T=${T} | ${train} | — |`);
    if (peer === null) console.log(`llama.cpp column missing: ${llama.reason}`);
    else {
      const i = peer.info;
      console.log(
        `llama.cpp: ${i.runtime}, ggml CPU build ${i.cpu_variant}, ${i.threads} thread, batch ${i.batchSize}, ` +
          `F16 KV cache, flash attention ${
            i.flashAttention ? "on" : "off"
          }, warmed up; ${peerPrompt.length} ` +
          `prompt samples (tokens/s: ${spread(peerPrompt.map((s) => T / s))}), ${peerGenerate.length} ` +
          `generation samples (${spread(peerGenerate.map((s) => GENERATED / s))}); on two threads ` +
          `${peerGenerate2.length} generation samples (${spread(peerGenerate2.map((s) => GENERATED / s))})`,
      );
    }
    console.log(`\nOn 1 and 2 kernel threads (llama.cpp on one thread; ratio = ours / llama.cpp)`);
    console.log(`| measure | 1 thread | ratio | 2 threads | ratio | 2t / 1t |`);
    console.log(`|---|---|---|---|---|---|`);
    const row = (name: string, x: number[], peer: number) =>
      console.log(
        `| ${name} | ${f(x[0]!)} | ${r(x[0]!, peer)} | ${f(x[1]!)} | ${r(x[1]!, peer)} | ${
          r(x[1]!, x[0]!)
        } |`,
      );
    row("prompt processing (tokens/s)", ours(oursPrompt, T), pp);
    row("generation, KV cache (tokens/s)", ours(oursNext, 1), tg);
    row("generation, KV cache, float32 panels, no code panels (tokens/s)", ours(plainNext, 1), tg);
    row("generation, draft-and-verify (tokens/s)", drafted.map((p) => 1 / p.seconds), tg);
    row("generation, tokens only, exact pruned head (tokens/s)", ours(pruned, 1), tg);
    const perRow = candidates.map((n, i) => (n / (pruned[i]!.length * GENERATED)).toFixed(1));
    console.log(
      `| pruned head: logits computed exactly per token (of ${c.vocab_size}); rows the whole head decided | ${
        perRow[0]
      }; ${wholeRows[0]} | | ${perRow[1]}; ${wholeRows[1]} | | |`,
    );
    // llama.cpp on as many threads as ours, its generation taken before each of our two-thread samples
    console.log(
      `| llama.cpp generation on as many threads (tokens/s) | ${f(tg)} | | ${f(tg2)} | | ${r(tg2, tg)} |`,
    );
    const equal = (name: string, x: number[]) =>
      console.log(
        `| ${name}, ratio to llama.cpp on as many threads | ${r(x[0]!, tg)} | | ${r(x[1]!, tg2)} | | |`,
      );
    equal("generation, KV cache", ours(oursNext, 1));
    equal("generation, tokens only, exact pruned head", ours(pruned, 1));
    const woken = wakeUps.map((w, i) => (w / (oursNext[i]!.length * GENERATED)).toFixed(2));
    console.log(
      `| generation, kernel worker wake-ups per token | ${woken[0]} | | ${woken[1]} | | |`,
    );
    const rate = drafted.map((d) => `${d.accepted}/${d.drafted} (${f((100 * d.accepted) / d.drafted)}%)`);
    console.log(`| draft-and-verify acceptance | ${rate[0]} | | ${rate[1]} | | |`);
    const ortError = ortDrafters.find((d) => d instanceof Error);
    if (ortError === undefined) {
      row(
        `generation, draft-and-verify, onnxruntime drafter, k=${ORT_K}, tokens only (tokens/s)`,
        ortDrafted.map((p) => 1 / p.seconds),
        tg,
      );
      const ortRate = ortDrafted.map((d) =>
        `${d.accepted}/${d.drafted} (${f((100 * d.accepted) / d.drafted)}%)`
      );
      console.log(
        `| draft-and-verify acceptance, onnxruntime drafter | ${ortRate[0]} | | ${ortRate[1]} | | |`,
      );
    } else console.log(`onnxruntime drafter rows missing: ${ortError.message}`);
    row("training step (steps/s)", step.map((p) => 1 / p.seconds), NaN);
    console.log(`| training step (s) | ${f(step[0]!.seconds)} | | ${f(step[1]!.seconds)} | | |`);
    const freshSeconds = THREADS.map((t) => fresh.find((x) => x.threads === t)?.seconds ?? NaN);
    console.log(
      `| training step, fresh process (s) | ${f(freshSeconds[0]!)} | | ${f(freshSeconds[1]!)} | | ${
        r(freshSeconds[0]!, freshSeconds[1]!)
      } |`,
    );
    for (const x of fresh) {
      console.log(
        `| training step peak RSS, fresh process, ${x.threads} thread${x.threads > 1 ? "s" : ""} | ${
          f(x.peak)
        } MB (${f(x.loaded)} MB after loading) | | | | |`,
      );
    }
    if (torch.seconds !== null) {
      console.log(
        `PyTorch ${torch.version} (1 thread, reference profile): ${
          f(torch.seconds)
        } s per step; ours / torch time ${r(step[0]!.seconds, torch.seconds)}`,
      );
    } else console.log(`PyTorch step not timed: ${torch.reason}`);
    console.log(
      `code panels: ${coded} of ${matrices.length} matrices (resident in all: ${
        f(residentBytes / 2 ** 20)
      } MiB)`,
    );
    console.log(
      `kernel threads ready: ${threadsReady} of 2; ${navigator.hardwareConcurrency} CPUs; 1-minute load average ${loadAtStart} at start, ${load()} at end`,
    );
  });
}

/** The same step shape timed in PyTorch with the seed system's reference profile, when torch is installed. */
async function torchStep(): Promise<
  { seconds: number; version: string; reason: null } | { seconds: null; reason: string }
> {
  const python = new URL("../.cache/venv-torch/bin/python", import.meta.url).pathname;
  const script = new URL("./torch_step.py", import.meta.url).pathname;
  try {
    const out = await new Deno.Command(python, {
      args: [script, String(T)],
      env: {
        OMP_NUM_THREADS: "1",
        MKL_NUM_THREADS: "1",
        ATEN_CPU_CAPABILITY: "default",
        MKL_ENABLE_INSTRUCTIONS: "SSE4_2",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      return { seconds: null, reason: new TextDecoder().decode(out.stderr).trim().split("\n").pop()! };
    }
    const { seconds, version } = JSON.parse(new TextDecoder().decode(out.stdout));
    return { seconds, version, reason: null };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      return {
        seconds: null,
        reason: ".cache/venv-torch is missing (NEURO_SLOW=1 tests/kernels/torch_parity_test.ts builds it)",
      };
    }
    throw e;
  }
}
