/**
 * Test helper run as a subprocess by the SmolLM2 parity tests: loads the GGUF given as the first argument and
 * prints one JSON line with the SHA-256 of the logits of a 24-token prompt (every position), the greedy answer
 * (ids) to it and the kernel threads that were ready, under whatever NEURO_THREADS / NEURO_KERNELS the
 * process was given.
 */
import { sha256Hex } from "../../core/digest.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { forwardLogits, generate } from "../../kernels/generation.ts";
import { kernelThreads } from "../../kernels/threads.ts";
import { wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";

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
const answer = generate(model, PROBE_PROMPT, 8);
console.log(JSON.stringify({
  logits: sha256Hex(new Uint8Array(logits.buffer, logits.byteOffset, logits.byteLength)),
  tokens: answer.tokens,
  ready,
}));
