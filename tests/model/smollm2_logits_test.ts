/**
 * Our kernels on the imported SmolLM2 against llama.cpp (node-llama-cpp 3.21.1, one thread, float32 KV cache)
 * on the same GGUF. Two references:
 * - the Q4_1 file as shipped: llama.cpp quantises activations to 8 bits inside its Q4_1 dot products, so its
 *   log-probabilities differ from our float32 arithmetic by up to ~0.8 and near-ties can flip;
 * - an F32 copy (every tensor dequantised, same values we import): the only differences left are summation
 *   order and transcendental functions, so every argmax must agree and log-probabilities stay within 2e-3.
 * Figures are printed; comparisons are on log-probabilities (logit − logsumexp), since llama.cpp returns
 * probabilities.
 */
import assert from "node:assert/strict";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { generate } from "../../kernels/generation.ts";
import { headLogits } from "../../kernels/head.ts";
import { componentNames, type Model } from "../../kernels/model.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import { stageForward } from "../../kernels/stage.ts";
import { smollm2File } from "./smollm2_file.ts";
import { f32Copy, type LlamaReference, llamaReference } from "./oracle/oracle.ts";

const file = await smollm2File();
const q41 = await llamaReference(file.path);
const f32 = q41.ref === null ? q41 : await llamaReference(await f32Copy(file.path));
const model: Model | null = q41.ref === null
  ? null
  : modelFromGguf(readGguf(await Deno.readFile(file.path!)));

/** Logits [T, V] of our full forward on one row of ids. */
function forward(m: Model, ids: readonly number[]): Float32Array {
  const c = m.config, T = ids.length;
  const tables = rotaryTables(T, c.hidden_size / c.num_attention_heads, c.rope_theta);
  const shape = { config: c, B: 1, T, ids: Int32Array.from(ids), tables };
  const { output } = stageForward(shape, componentNames(c), m.components, null);
  return headLogits(output, m.components.norm!, m.components.embed!, c, T);
}

interface Comparison {
  agree: number;
  flips: { position: number; ours: number; llama: number; gap: number }[];
  maxDiff: number;
}

/** Compares our logits with a reference's log-probabilities (over tokens llama.cpp gives > e^-20). */
function compare(logits: Float32Array, ref: LlamaReference, logprobs: Float32Array, V: number): Comparison {
  const out: Comparison = { agree: 0, flips: [], maxDiff: 0 };
  ref.positions.forEach((p, t) => {
    const row = logits.subarray(t * V, (t + 1) * V);
    let best = 0;
    for (let i = 1; i < V; i++) if (row[i]! > row[best]!) best = i;
    let sum = 0;
    for (let i = 0; i < V; i++) sum += Math.exp(row[i]! - row[best]!);
    const lse = row[best]! + Math.log(sum);
    if (best === p.argmax) out.agree++;
    else {out.flips.push({
        position: t,
        ours: best,
        llama: p.argmax,
        gap: p.top[0]![1] - (p.top[1]?.[1] ?? -Infinity),
      });}
    for (let i = 0; i < V; i++) {
      const l = logprobs[t * V + i]!;
      if (l > -20) out.maxDiff = Math.max(out.maxDiff, Math.abs(row[i]! - lse - l));
    }
  });
  return out;
}

const logits = model === null || q41.ref === null ? null : forward(model, q41.ref.prompt);

Deno.test({
  name: "on a 64-token prompt our next-token argmax equals llama.cpp's on the F32 copy at every position",
  ignore: f32.ref === null || logits === null,
  fn: () => {
    const r = compare(logits!, f32.ref!, f32.logprobs!, model!.config.vocab_size);
    console.log(`llama.cpp F32: ${r.agree}/64 argmax agree, max |Δ log-prob| ${r.maxDiff.toExponential(3)}`);
    assert.deepEqual(f32.ref!.prompt, q41.ref!.prompt);
    assert.equal(r.agree, 64, JSON.stringify(r.flips));
    assert.ok(
      r.maxDiff > 0,
      "llama.cpp's arithmetic differs from ours, so the difference is not exactly zero",
    );
    assert.ok(r.maxDiff < 2e-3, `max |Δ log-prob| is ${r.maxDiff}`);
  },
});

Deno.test({
  name: "against llama.cpp on the Q4_1 file the argmax differs only at near-ties (gap < 0.1 nats)",
  ignore: q41.ref === null || logits === null,
  fn: () => {
    const r = compare(logits!, q41.ref!, q41.logprobs!, model!.config.vocab_size);
    console.log(
      `llama.cpp Q4_1: ${r.agree}/64 argmax agree, max |Δ log-prob| ${r.maxDiff.toFixed(3)}, flips ${
        JSON.stringify(r.flips)
      }`,
    );
    assert.ok(r.agree >= 60, `${r.agree}/64 agree`);
    for (const f of r.flips) {
      assert.ok(f.gap < 0.1, `position ${f.position}: llama.cpp's top-2 gap is ${f.gap}`);
      assert.equal(
        q41.ref!.positions[f.position]!.top[1]![0],
        f.ours,
        `position ${f.position}: ours is llama's second`,
      );
    }
    assert.ok(r.maxDiff < 1.5, `max |Δ log-prob| is ${r.maxDiff}`);
  },
});

Deno.test({
  name: "the greedy answer to 'What is the capital of France?' says Paris, as llama.cpp on the F32 copy does",
  ignore: f32.ref === null || model === null,
  fn: () => {
    const { tokens: answer } = generate(model!, f32.ref!.chat.ids, 12, 2); // stops after <|im_end|> (id 2)
    console.log(
      `our greedy answer ids ${JSON.stringify(answer)}; llama.cpp F32: ${JSON.stringify(f32.ref!.answer)}`,
    );
    assert.deepEqual(answer, f32.ref!.answer.ids);
    assert.match(f32.ref!.answer.text, /Paris/);
  },
});
