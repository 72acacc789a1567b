/**
 * Test helper run as a subprocess by the SmolLM2 parity tests: loads the GGUF given as the first argument and
 * prints one JSON line with the SHA-256 of the logits of a 24-token prompt (every position), the greedy answer
 * (16 ids and the SHA-256 of their logits) from `generate`, then with the weights resident and prepacked
 * (`makeModelResident`, as `deno task generate` has them) from `generate` again (its one-row matmuls on the
 * code panels, with how many matrices have them) and from draft-and-verify with the int8 drafter and
 * with a deliberately wrong drafter (every third proposal changed), the same three answers' ids alone by the
 * exact pruned head (`generateTokens`, `tokensOnly`) with its figures, the drafting figures, the record root of
 * one 3-stage SGD step on the prompt's first 16 tokens (attention backward and the head's cross-entropy), and
 * the kernel threads that were ready, under whatever NEURO_THREADS / NEURO_KERNELS the process was given.
 */
import { sha256Hex } from "../../core/digest.ts";
import { makeModelResident } from "../../kernels/block.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { type Drafter, Q8Drafter } from "../../kernels/draft.ts";
import { generateDrafted } from "../../kernels/draft_verify.ts";
import { forwardLogits, generate, generateTokens, type Generation } from "../../kernels/generation.ts";
import { HEAD_ARGMAX_STATS } from "../../kernels/head_argmax.ts";
import { manifestOf } from "../../kernels/manifest.ts";
import { componentParameters } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { trainStep } from "../../kernels/step.ts";
import { kernelThreads } from "../../kernels/threads.ts";
import { codedB, wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";

/** The prompt: "The history of mathematics spans thousands of years. Early civilizations" and more. */
export const PROBE_PROMPT = [
  504,
  1463,
  282,
  14848,
  12180,
  6981,
  282,
  935,
  30,
  12897,
  22373,
  281,
  25811,
  284,
  11715,
  3200,
  14298,
  284,
  8309,
  288,
  2869,
  1298,
  28,
  2873,
];

const ready = await wasmMatmulThreadsReady(kernelThreads());
const model = modelFromGguf(readGguf(await Deno.readFile(Deno.args[0]!)));
const logits = forwardLogits(model, PROBE_PROMPT);
const root = (x: Float32Array) => sha256Hex(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
const answer = (g: Generation) => ({
  tokens: g.tokens,
  logits: sha256Hex(new Uint8Array(g.logits.flatMap((l) => [...new Uint8Array(l.slice().buffer)]))),
});
const greedy = answer(generate(model, PROBE_PROMPT, 16));
// From here on the weights are resident and prepacked, each block's groups packed together (as in deno task
// generate): the drafted answers and the training step read them there.
makeModelResident(model.components);
// Decoding one token at a time on the resident weights reads their code panels (matvec_codes: SmolLM2's block
// matrices are its Q4_1 blocks' values, its tied embedding its Q8_0 blocks'), q, k and v in one call, gate and
// up in one; more rows read the prepacked float32 panels.
const coded =
  Object.values(model.components).flatMap((t) => Object.values(t)).filter((t) =>
    t.shape.length === 2 && codedB(t.data, t.shape[1]!, t.shape[0]!) !== null
  ).length;
const resident = answer(generate(model, PROBE_PROMPT, 16));
const q8 = new Q8Drafter(model);
let n = 0;
const wrong: Drafter = {
  draft: (cache, next, k) => q8.draft(cache, next, k).map((id) => (++n % 3 === 0 ? (id + 1) % 49152 : id)),
};
const drafted = generateDrafted(model, PROBE_PROMPT, 16, { drafter: q8 });
const perturbed = generateDrafted(model, PROBE_PROMPT, 16, { drafter: wrong });
// The greedy ids alone, by the exact pruned head (`headTokens`), one token at a time and drafted.
const pruned = {
  tokens: generateTokens(model, PROBE_PROMPT, 16),
  drafted: generateDrafted(model, PROBE_PROMPT, 16, { drafter: q8, tokensOnly: true }).tokens,
  perturbed: generateDrafted(model, PROBE_PROMPT, 16, { drafter: wrong, tokensOnly: true }).tokens,
  stats: { ...HEAD_ARGMAX_STATS },
};
const c = model.config, block = componentParameters(c, "block_000");
const head = componentParameters(c, "embed") + componentParameters(c, "norm");
const partitions = place(c, [head + 10 * block, 10 * block, 10 * block]);
const manifest = manifestOf(model, { origin: { format: "gguf" }, tokenizer_root: "0".repeat(64) });
const ids = PROBE_PROMPT.slice(0, 16);
const batch = { input_ids: [ids], labels: [[...ids.slice(1), -100]] };
const step = trainStep({ model, manifest, batch, partitions, learningRate: 1e-4, clip: 1, step: 0 });
console.log(JSON.stringify({
  logits: root(logits),
  greedy,
  resident,
  coded,
  drafted: answer(drafted),
  perturbed: answer(perturbed),
  pruned,
  stats: { drafted: drafted.stats, perturbed: perturbed.stats },
  step: step.recordRoot,
  ready,
}));
