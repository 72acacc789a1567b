/**
 * Test helper run as a subprocess by `threads_test.ts`: one devnet training step (two stages, 2 rows × 32
 * tokens) and a greedy answer, under whatever NEURO_THREADS / NEURO_KERNELS the process was given. Prints
 * one JSON line: the record root (which commits the root of every activation, gradient and component), the
 * candidate root, a second step's record root (from the candidate, whose tensors are on shared memory), the
 * greedy token ids, the threads ready, the task workers alive and why threads were off (if they were).
 */
import { sha256Hex } from "../../core/digest.ts";
import { PRESETS } from "../../kernels/config.ts";
import { generate } from "../../kernels/generation.ts";
import { buildManifest, componentFiles } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { trainStep } from "../../kernels/step.ts";
import { taskWorkers } from "../../kernels/task_pool.ts";
import { kernelThreads } from "../../kernels/threads.ts";
import { wasmMatmulThreadsDisabled, wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";

const ready = await wasmMatmulThreadsReady(kernelThreads());
const model = initModel(PRESETS.devnet, 3);
const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
const manifest = buildManifest(model.config, roots, {
  origin: { kind: "init", seed: 3 },
  tokenizer_root: "ab".repeat(32),
});
const ids = [0, 1].map((b) => Array.from({ length: 32 }, (_, t) => (b * 977 + t * 131 + 7) % 4096));
const out = trainStep({
  model,
  manifest,
  batch: { input_ids: ids, labels: ids.map((r) => [...r.slice(1), -100]) },
  partitions: [["embed", "norm", "block_000", "block_001"], ["block_002", "block_003"]],
  learningRate: 0.01,
  clip: 1,
  step: 0,
});
// A second step from the first one's candidate: its parameters and files are on shared memory, so its update
// and digests run on the task workers (`kernels/task_pool.ts`) too.
const second = trainStep({
  model: out.candidate,
  manifest: out.candidateManifest,
  batch: { input_ids: ids, labels: ids.map((r) => [...r.slice(1), -100]) },
  partitions: [["embed", "norm", "block_000"], ["block_001", "block_002", "block_003"]],
  learningRate: 0.01,
  clip: 1,
  step: 1,
});
const workers = taskWorkers();
const answer = generate(second.candidate, ids[0]!.slice(0, 12), 6);
const logits = new Uint8Array(answer.logits.flatMap((l) => [...new Uint8Array(l.slice().buffer)]));
console.log(JSON.stringify({
  record: out.recordRoot,
  candidate: out.candidateRoot,
  second: second.recordRoot,
  taskWorkers: workers,
  tokens: answer.tokens,
  logits: sha256Hex(logits),
  ready,
  disabled: ready > 1 ? null : wasmMatmulThreadsDisabled(),
}));
