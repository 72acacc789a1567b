// llama.cpp as the benchmarks' peer, through node-llama-cpp@3.21.1 on the CPU with one thread (and a second
// context on two, for comparisons at equal thread counts), kept running so that a benchmark can take the
// peer's figures between its own (interleaved, not one batch before them).
// Usage: node llama_peer.mjs MODEL.gguf PROBES.json
// Loads the model once, in llama.cpp's single-thread configuration that measured best here (its default F16
// KV cache, batch 512, no flash attention; see peer_config below), runs one prompt and one generation to warm
// up, prints {"ready": …} and then answers one JSON line per command line on stdin:
//   prompt       → {"seconds": s}  one prefill of the probes' 64-token prompt (logits of its last token only)
//   generate N   → {"seconds": s}  N greedy tokens after that prompt (the prompt itself not timed)
//   generate N 2 → {"seconds": s}  the same on the two-thread context
// and exits on end of input or "quit". The CPU variant of ggml that node-llama-cpp loaded (its prebuilt
// binaries pick one for the CPU at run time) is reported in the ready line.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
// Imported by a computed name so that `deno check .` does not try to resolve this Node-only package.
const packageName = "node-llama-cpp";
const { getLlama } = await import(packageName);

const [modelPath, probesPath] = process.argv.slice(2);
if (!modelPath || !probesPath) {
  console.error("usage: node llama_peer.mjs MODEL.gguf PROBES.json");
  process.exit(2);
}
const input = JSON.parse(readFileSync(probesPath, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const prompt = Array.from(model.tokenize(input.logits_text, true)).slice(0, input.logits_tokens);
if (prompt.length !== input.logits_tokens) {
  throw new Error(`logits_text has only ${prompt.length} tokens`);
}
// On the 2-core dev machine llama.cpp's default F16 KV cache measured faster than F32 (117 against 82 prompt
// tokens/s, 49 against 37 generated, medians of 7, load ~3); flash attention and smaller batches were not
// measured on a quiet machine, so llama.cpp's defaults are kept for them.
const peer_config = { contextSize: 512, batchSize: 512, threads: 1, flashAttention: false };
const context = await model.createContext(peer_config);
const sequence = context.getSequence();
const context2 = await model.createContext({ ...peer_config, threads: 2 });
const sequence2 = context2.getSequence();

async function promptSeconds() {
  await sequence.clearHistory();
  const t0 = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens(prompt);
  return (performance.now() - t0) / 1000;
}

// Greedy decoding through llama.cpp's own loop (`evaluate`, temperature 0), timed from the first generated
// token (the prompt's prefill and its token are not generation) to the n-th after it.
async function generateSeconds(n, seq = sequence) {
  await seq.clearHistory();
  let count = 0, t0 = 0;
  for await (const _token of seq.evaluate(prompt, { temperature: 0 })) {
    if (count === 0) t0 = performance.now();
    if (++count > n) break;
  }
  return (performance.now() - t0) / 1000;
}

await promptSeconds();
await generateSeconds(input.generate_tokens);
await generateSeconds(input.generate_tokens, sequence2);
const maps = readFileSync("/proc/self/maps", "utf8").match(/libggml-cpu-[a-z0-9]+\.so/);
console.log(JSON.stringify({
  ready: {
    runtime: "node-llama-cpp@3.21.1",
    cpu_variant: maps === null ? "unknown" : maps[0],
    prompt_tokens: prompt.length,
    ...peer_config,
  },
}));

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg, threads, ...rest] = line.trim().split(/\s+/);
  if (command === "quit") break;
  try {
    if (command === "prompt") console.log(JSON.stringify({ seconds: await promptSeconds() }));
    else if (
      command === "generate" && /^[1-9][0-9]{0,3}$/.test(arg ?? "") &&
      [undefined, "1", "2"].includes(threads) &&
      rest.length === 0
    ) {
      const seconds = await generateSeconds(Number(arg), threads === "2" ? sequence2 : sequence);
      console.log(JSON.stringify({ seconds }));
    } else console.log(JSON.stringify({ error: `Cannot run command: value is ${JSON.stringify(line)}` }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e?.message ?? e) }));
  }
}
await context2.dispose();
await context.dispose();
await model.dispose();
await llama.dispose();
