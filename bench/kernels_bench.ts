/**
 * Kernel benchmarks (`deno task bench`): matmul GFLOP/s for the reference loops, the deterministic
 * WebAssembly SIMD path and onnxruntime-node (the fast, non-consensus comparison) on one thread, and the
 * WebAssembly path and onnxruntime on two threads (`wasm 2t`, `ort 2t`), on the SmolLM2-135M shapes
 * 256×576×576, 256×576×1,536 and 256×576×49,152. Prints a GFLOP/s table at the end with the ratios
 * wasm/ort on one thread, wasm/ort on two, and wasm 2 threads / wasm 1 thread (the threads' speed-up).
 *
 * Model-level cases: one devnet training step (8 rows × 64 tokens, one stage) and one SmolLM2-135M-shaped
 * block forward + backward on 256 tokens, on the default (fast, bit-identical) kernels on 1 and on 2 threads
 * (`NEURO_THREADS` never changes a bit, only the time); SmolLM2's attention forward + backward on 256 tokens
 * and its head's cross-entropy on 64 × 49,152 logits on the reference loops and on the softmax kernels on 1 and
 * 2 threads (split by head and by vocabulary); then peak memory.
 * The reference loops on the 49,152-wide head take several seconds per call, so that one case runs only with
 * `NEURO_BENCH_FULL=1`.
 * @module
 */

import { sha256Hex } from "../core/digest.ts";
import {
  attentionBackward,
  attentionBackwardReference,
  attentionForward,
  attentionForwardReference,
} from "../kernels/attention.ts";
import { blockBackward, blockForward } from "../kernels/block.ts";
import {
  crossEntropyForwardBackward,
  crossEntropyForwardBackwardReference,
} from "../kernels/cross_entropy.ts";
import { headDim, PRESETS } from "../kernels/config.ts";
import { buildManifest, componentFiles } from "../kernels/manifest.ts";
import { matmul, matmulReference } from "../kernels/matmul.ts";
import { blockSpec, initModel } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { rotaryTables } from "../kernels/rotary.ts";
import type { Tensors } from "../kernels/safetensors.ts";
import { trainStep } from "../kernels/step.ts";
import { tensor } from "../kernels/tensor.ts";
import { setKernelThreads } from "../kernels/threads.ts";
import { wasmMatmul, wasmMatmulAvailable, wasmMatmulThreadsReady } from "../kernels/wasm/matmul_wasm.ts";

type Shape = readonly [number, number, number];
const SHAPES: readonly Shape[] = [[256, 576, 576], [256, 576, 1536], [256, 576, 49152]];
const FULL = Deno.env.get("NEURO_BENCH_FULL") === "1";

const best = new Map<string, number>(); // "path|M×K×N" → best milliseconds per call
let peakRss = 0; // bytes, sampled after every timed call
const ortCheck: string[] = []; // how far onnxruntime's product is from ours (proves it computes the same thing)

function record(path: string, shape: Shape, ms: number): void {
  const key = `${path}|${shape.join("x")}`;
  best.set(key, Math.min(best.get(key) ?? Infinity, ms));
  peakRss = Math.max(peakRss, Deno.memoryUsage().rss);
}

/** The 1-minute load average (other processes share the CPUs), or "?" without --allow-sys. */
function load(): string {
  try {
    return Deno.loadavg()[0]!.toFixed(2);
  } catch {
    return "?";
  }
}
const loadAtStart = load();
const threadsReady = await wasmMatmulThreadsReady(2); // start the workers before anything is timed

function filled(n: number, seed: number): Float32Array {
  const x = new Float32Array(n); // deterministic values in [-0.5, 0.5)
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    x[i] = (s >>> 8) / 16777216 - 0.5;
  }
  return x;
}

// ---- onnxruntime-node: a one-node MatMul model written as protobuf bytes by hand ----

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
function bytesField(field: number, body: number[] | string): number[] {
  const b = typeof body === "string" ? [...new TextEncoder().encode(body)] : body;
  return [...varint((field << 3) | 2), ...varint(b.length), ...b];
}
function intField(field: number, v: number): number[] {
  return [...varint(field << 3), ...varint(v)];
}
function tensorValueInfo(name: string, dims: readonly number[]): number[] {
  const shape = dims.flatMap((d) => bytesField(1, intField(1, d))); // TensorShapeProto.dim.dim_value
  const tensorType = [...intField(1, 1), ...bytesField(2, shape)]; // elem_type FLOAT, shape
  return [...bytesField(1, name), ...bytesField(2, bytesField(1, tensorType))]; // ValueInfoProto
}

/** ModelProto bytes for C[M,N] = MatMul(A[M,K], B[K,N]) (IR 8, opset 13). */
export function onnxMatmulModel(M: number, K: number, N: number): Uint8Array {
  const node = [
    ...bytesField(1, "A"),
    ...bytesField(1, "B"),
    ...bytesField(2, "C"),
    ...bytesField(4, "MatMul"),
  ];
  const graph = [
    ...bytesField(1, node),
    ...bytesField(2, "matmul"),
    ...bytesField(11, tensorValueInfo("A", [M, K])),
    ...bytesField(11, tensorValueInfo("B", [K, N])),
    ...bytesField(12, tensorValueInfo("C", [M, N])),
  ];
  const opset = [...bytesField(1, ""), ...intField(2, 13)];
  return new Uint8Array([...intField(1, 8), ...bytesField(7, graph), ...bytesField(8, opset)]);
}

// deno-lint-ignore no-explicit-any
type Ort = any;
let ort: Ort = null;
let ortError = "";
try {
  ort = await import("onnxruntime-node");
} catch (e) {
  ortError = `onnxruntime-node did not load under Deno: ${(e as Error).message}`;
}

// ---- the cases ----

for (const shape of SHAPES) {
  const [M, K, N] = shape;
  const label = `${M}x${K}x${N}`;
  const a = filled(M * K, 1), b = filled(K * N, 2), c = new Float32Array(M * N);
  const timed = (path: string, fn: () => void) => () => {
    const t0 = performance.now();
    fn();
    record(path, shape, performance.now() - t0);
  };

  Deno.bench({
    name: `matmul reference ${label}`,
    group: label,
    ignore: N > 10000 && !FULL,
    fn: timed("reference", () => matmulReference(a, b, c, M, K, N, "nn")),
  });
  Deno.bench({
    name: `matmul wasm ${label}`,
    group: label,
    baseline: true,
    ignore: !wasmMatmulAvailable(),
    fn: timed("wasm", () => wasmMatmul(a, b, c, M, K, N, "nn", 1)),
  });
  Deno.bench({
    name: `matmul wasm nt ${label}`,
    group: label,
    ignore: !wasmMatmulAvailable(),
    fn: timed("wasm nt", () => wasmMatmul(a, b, c, M, K, N, "nt", 1)),
  });
  Deno.bench({
    name: `matmul wasm 2 threads ${label}`,
    group: label,
    ignore: !wasmMatmulAvailable(),
    fn: timed("wasm 2t", () => wasmMatmul(a, b, c, M, K, N, "nn", 2)),
  });

  if (ort !== null) {
    for (const threads of [1, 2]) {
      const session = await ort.InferenceSession.create(onnxMatmulModel(M, K, N), {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionMode: "sequential",
        graphOptimizationLevel: "all",
      });
      const feeds = { A: new ort.Tensor("float32", a, [M, K]), B: new ort.Tensor("float32", b, [K, N]) };
      if (threads === 1) {
        const theirs = (await session.run(feeds)).C.data as Float32Array;
        const ours = new Float32Array(M * N);
        matmul(a, b, ours, M, K, N, "nn");
        let worst = 0;
        for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(theirs[i]! - ours[i]!));
        ortCheck.push(`${label}: max |onnxruntime − deterministic| = ${worst.toExponential(2)}`);
      }
      Deno.bench({
        name: `matmul onnxruntime ${threads} thread${threads > 1 ? "s" : ""} ${label}`,
        group: label,
        async fn() {
          const t0 = performance.now();
          await session.run(feeds);
          record(threads === 1 ? "onnxruntime" : "ort 2t", shape, performance.now() - t0);
        },
      });
    }
  }
}

// ---- model-level cases ----

const modelMs = new Map<string, number>(); // case → best milliseconds

function timedModel(name: string, fn: () => void): () => void {
  return () => {
    const t0 = performance.now();
    fn();
    modelMs.set(name, Math.min(modelMs.get(name) ?? Infinity, performance.now() - t0));
    peakRss = Math.max(peakRss, Deno.memoryUsage().rss);
  };
}

{
  const model = initModel(PRESETS.devnet, 1);
  const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
  const manifest = buildManifest(model.config, roots, {
    parent: null,
    origin: { kind: "init", seed: 1 },
    tokenizer_root: "ab".repeat(32),
  });
  const [B, T] = [8, 64];
  const ids = Array.from(
    { length: B },
    (_, b) => Array.from({ length: T }, (_, t) => (b * 131 + t * 17) % 4096),
  );
  const labels = ids.map((row) => [...row.slice(1), -100]);
  const partitions = place(model.config, [10 ** 12]);
  for (const threads of [1, 2]) {
    const suffix = threads === 1 ? "" : `, ${threads} threads`;
    Deno.bench({
      name: `devnet training step 8x64 tokens${suffix}`,
      group: "model",
      fn: timedModel(`devnet training step (8×64 tokens, 1 stage${suffix})`, () => {
        setKernelThreads(threads);
        trainStep({
          model,
          manifest,
          batch: { input_ids: ids, labels },
          partitions,
          learningRate: 0.01,
          clip: 1,
          step: 0,
        });
      }),
    });
  }
}

{
  const c = PRESETS["smollm2-135m"];
  const [B, T, C] = [1, 256, c.hidden_size];
  const p: Tensors = {};
  let seed = 10;
  for (const [name, shape] of Object.entries(blockSpec(c))) {
    const scale = shape.length === 1 ? 1 : 1 / Math.sqrt(shape[1]!); // norms ~1, projections ~1/sqrt(fan-in)
    const data = filled(shape.reduce((n, d) => n * d, 1), seed++).map((v) =>
      Math.fround(v * (name.includes("norm") ? 0.2 : 2 * scale) + (name.includes("norm") ? 1 : 0))
    );
    p[name] = tensor(shape, data);
  }
  const tables = rotaryTables(T, headDim(c), c.rope_theta);
  const x = filled(B * T * C, 3), dy = filled(B * T * C, 4).map((v) => Math.fround(v / 256)); // x, dy: [B·T, C]
  for (const threads of [1, 2]) {
    const suffix = threads === 1 ? "" : `, ${threads} threads`;
    Deno.bench({
      name: `smollm2-135m block forward+backward 256 tokens${suffix}`,
      group: "model",
      fn: timedModel(`SmolLM2-135M block forward+backward (256 tokens${suffix})`, () => {
        setKernelThreads(threads);
        const { cache } = blockForward(x, p, c, B, T, tables);
        blockBackward(dy, cache, p, c, B, T, tables);
      }),
    });
  }
}

{
  // Attention split by head and the head's cross-entropy split by vocabulary (kernels/wasm/softmax.wat),
  // against their reference loops; SmolLM2's shapes: 9 heads, 3 kv heads, width 64, 256 tokens; 64 × 49,152.
  const c = PRESETS["smollm2-135m"];
  const dims = { B: 1, Tq: 256, Tk: 256, H: 9, KVH: 3, D: 64 };
  const q = filled(256 * 9 * 64, 21), k = filled(256 * 3 * 64, 22), v = filled(256 * 3 * 64, 23);
  const dOut = filled(256 * 9 * 64, 24);
  const [N, V] = [64, c.vocab_size];
  const logits = filled(N * V, 25).map((x) => Math.fround(x * 20));
  const labels = Int32Array.from({ length: N }, (_, n) => (n * 977 + 5) % V);
  const cases: [string, () => void, () => void][] = [
    ["reference loops", () => {
      const f = attentionForwardReference(q, k, v, dims);
      attentionBackwardReference(dOut, q, k, v, f.cache, dims);
    }, () => void crossEntropyForwardBackwardReference(logits, labels, N, V)],
    ...[1, 2].map((threads): [string, () => void, () => void] => [
      threads === 1 ? "1 thread" : `${threads} threads`,
      () => {
        setKernelThreads(threads);
        const f = attentionForward(q, k, v, dims);
        attentionBackward(dOut, q, k, v, f.cache, dims);
      },
      () => {
        setKernelThreads(threads);
        crossEntropyForwardBackward(logits, labels, N, V);
      },
    ]),
  ];
  for (const [label, attention, head] of cases) {
    Deno.bench({
      name: `smollm2-135m attention forward+backward 256 tokens, ${label}`,
      group: "softmax",
      fn: timedModel(`SmolLM2-135M attention forward+backward (256 tokens, ${label})`, attention),
    });
    Deno.bench({
      name: `smollm2-135m head cross-entropy 64x49152, ${label}`,
      group: "softmax",
      fn: timedModel(`SmolLM2-135M head cross-entropy (64×49,152, ${label})`, head),
    });
  }
}

function peakHwm(): string {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(Deno.readTextFileSync("/proc/self/status"));
    return m ? `${(Number(m[1]) / 1024).toFixed(0)} MiB` : "unknown";
  } catch {
    return "unreadable (Linux only; deno bench needs --allow-all for /proc/self)";
  }
}

globalThis.addEventListener("unload", () => {
  const paths = ["reference", "wasm", "wasm nt", "onnxruntime", "wasm 2t", "ort 2t"];
  const ratios = ["wasm/ort", "2t: w/o", "wasm 2t/1t"];
  const lines = [
    "",
    'matmul GFLOP/s (best call; 2·M·K·N flops; 1 thread unless "2t"; "nn" unless marked)',
    ["shape".padEnd(16), ...paths.map((p) => p.padStart(12)), ...ratios.map((r) => r.padStart(11))].join(""),
  ];
  for (const shape of SHAPES) {
    const flops = 2 * shape[0] * shape[1] * shape[2];
    const rate = (p: string) => {
      const ms = best.get(`${p}|${shape.join("x")}`);
      return ms === undefined ? undefined : flops / ms / 1e6;
    };
    const cells = paths.map((p) => (rate(p)?.toFixed(1) ?? "-").padStart(12));
    const ratio = (x: string, y: string) => {
      const u = rate(x), v = rate(y);
      return (u !== undefined && v !== undefined ? (u / v).toFixed(2) : "-").padStart(11);
    };
    const row = [ratio("wasm", "onnxruntime"), ratio("wasm 2t", "ort 2t"), ratio("wasm 2t", "wasm")];
    lines.push([shape.join("×").padEnd(16), ...cells, ...row].join(""));
  }
  lines.push("", "model cases (default kernels): best call");
  for (const [name, ms] of modelMs) lines.push(`  ${name.padEnd(64)} ${ms.toFixed(1).padStart(9)} ms`);
  for (const name of [...modelMs.keys()].filter((n) => n.endsWith(", 2 threads)"))) {
    const one = modelMs.get(name.replace(", 2 threads)", ")"));
    if (one !== undefined) {
      lines.push(
        `  speed-up on 2 threads, ${name.replace(/ \(.*/, "")}: ${(one / modelMs.get(name)!).toFixed(2)}×`,
      );
    }
  }
  lines.push(`kernel threads ready: ${threadsReady} of 2`);
  lines.push("");
  if (!FULL) {
    lines.push("reference on the 49,152-wide head skipped (several s per call): set NEURO_BENCH_FULL=1");
  }
  if (ortError !== "") lines.push(ortError);
  lines.push(...ortCheck);
  lines.push(
    `${navigator.hardwareConcurrency} CPUs; 1-minute load average ${loadAtStart} at start, ${load()} at end`,
  );
  const rss = (peakRss / 2 ** 20).toFixed(0);
  lines.push(`largest RSS seen after a call: ${rss} MiB; process peak (VmHWM): ${peakHwm()}`);
  console.log(lines.join("\n"));
});
