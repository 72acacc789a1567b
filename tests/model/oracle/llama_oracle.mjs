// llama.cpp reference outputs for the SmolLM2 tests, through node-llama-cpp@3.21.1 on the CPU with one thread
// and a float32 KV cache.
// Usage: node llama_oracle.mjs MODEL.gguf PROBES.json OUT.json (the benchmarks' peer is llama_peer.mjs)
// Writes OUT.json (token ids, per-position argmax and top log-probabilities, a greedy answer, timings) and
// OUT.json.logprobs.f32 (natural-log probabilities of every token at every position, float32 little-endian).
import { readFileSync, writeFileSync } from "node:fs";
// Imported by a computed name so that `deno check .` does not try to resolve this Node-only package.
const packageName = "node-llama-cpp";
const { getLlama } = await import(packageName);

const [modelPath, probesPath, outPath] = process.argv.slice(2);
if (!modelPath || !probesPath || !outPath) {
  console.error("usage: node llama_oracle.mjs MODEL.gguf PROBES.json OUT.json");
  process.exit(2);
}
const input = JSON.parse(readFileSync(probesPath, "utf8"));
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
const model = await llama.loadModel({ modelPath });
const tokenize = (text) => Array.from(model.tokenize(text, true));

const probes = input.probes.map((text) => ({ text, ids: tokenize(text) }));
const chat = { text: input.chat, ids: tokenize(input.chat) };
const prompt = tokenize(input.logits_text).slice(0, input.logits_tokens);
if (prompt.length !== input.logits_tokens) {
  throw new Error(`logits_text has only ${prompt.length} tokens`);
}

// A float32 KV cache (llama.cpp's default is F16) so that only the weights' format limits the precision.
const context = await model.createContext({
  contextSize: 512,
  batchSize: 512,
  threads: 1,
  flashAttention: false,
  experimentalKvCacheKeyType: "F32",
  experimentalKvCacheValueType: "F32",
});

const sequence = context.getSequence();
// Throughput without probabilities: prompt processing (best of 3, logits of the last token only) and greedy
// generation of generate_tokens tokens after the prompt.
async function measureThroughput() {
  let promptBest = Infinity;
  for (let i = 0; i < 3; i++) {
    await sequence.clearHistory();
    const t0 = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(prompt);
    promptBest = Math.min(promptBest, (performance.now() - t0) / 1000);
  }
  await sequence.clearHistory();
  let step = await sequence.controlledEvaluate(
    prompt.map((
      t,
      i,
    ) => (i === prompt.length - 1 ? [t, { generateNext: { token: true } }] : t)),
  );
  const t0 = performance.now();
  for (let i = 0; i < input.generate_tokens; i++) {
    step = await sequence.controlledEvaluate([[step.at(-1).next.token, {
      generateNext: { token: true },
    }]]);
  }
  const seconds = (performance.now() - t0) / 1000;
  await sequence.clearHistory();
  return {
    prompt_tokens_per_second: prompt.length / promptBest,
    generate_tokens_per_second: input.generate_tokens / seconds,
  };
}

// Per-position next-token distributions on the prompt (prompt processing, timed).
let t0 = performance.now();
const results = await sequence.controlledEvaluate(
  prompt.map((
    t,
  ) => [t, { generateNext: { probabilities: true, token: true } }]),
);
const promptSeconds = (performance.now() - t0) / 1000;
const vocab = results[0].next.probabilities.size; // every token's probability is returned
const logprobs = new Float32Array(prompt.length * vocab);
const positions = results.map((r, i) => {
  const probs = r.next.probabilities;
  const row = logprobs.subarray(i * vocab, (i + 1) * vocab).fill(-Infinity);
  for (const [token, p] of probs) row[token] = Math.log(p);
  const top = [...probs.entries()].slice(0, 5).map((
    [token, p],
  ) => [token, Math.log(p)]);
  return { argmax: top[0][0], top };
});
await sequence.clearHistory();

// Greedy answer to the chat prompt (token generation, timed).
const answer = [];
t0 = performance.now();
let next = await sequence.controlledEvaluate(
  chat.ids.map((
    t,
    i,
  ) => (i === chat.ids.length - 1 ? [t, { generateNext: { token: true, probabilities: true } }] : t)),
);
const firstTop = [...next.at(-1).next.probabilities.entries()].slice(0, 5).map((
  [token, p],
) => [token, Math.log(p)]);
const chatPromptSeconds = (performance.now() - t0) / 1000;
t0 = performance.now();
for (let i = 0; i < input.generate_tokens; i++) {
  const token = next.at(-1).next.token;
  answer.push(token);
  if (token === 2) break;
  next = await sequence.controlledEvaluate([[token, {
    generateNext: { token: true },
  }]]);
}
const generateSeconds = (performance.now() - t0) / 1000;

const throughput = await measureThroughput();

writeFileSync(`${outPath}.logprobs.f32`, new Uint8Array(logprobs.buffer));
writeFileSync(
  outPath,
  JSON.stringify(
    {
      runtime: "node-llama-cpp@3.21.1",
      threads: 1,
      probes,
      chat,
      hello_world: tokenize("Hello world"),
      prompt,
      positions,
      answer: {
        ids: answer,
        text: model.detokenize(answer),
        first_top: firstTop,
      },
      throughput,
      timing: {
        prompt_tokens: prompt.length,
        prompt_seconds: promptSeconds,
        chat_prompt_tokens: chat.ids.length,
        chat_prompt_seconds: chatPromptSeconds,
        generated_tokens: answer.length,
        generate_seconds: generateSeconds,
      },
    },
    null,
    1,
  ),
);
await context.dispose();
await model.dispose();
await llama.dispose();
