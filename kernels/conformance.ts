/**
 * Conformance vectors (PROTOCOL §10.6): fixed seeds in, expected roots out — a forward, a backward, an
 * update and a 4-token generation on a small model of the devnet's shape family (`CONFORMANCE_CONFIG`, small
 * so that every role can afford the check at startup), plus a grid of our transcendental functions.
 * `genesis/vectors/kernels.json` holds them (written by `deno task kernels:vectors`), every genesis pins
 * them (`genesis/conformance.ts`), and every role refuses to start when its kernels do not reproduce the
 * pinned ones (`assertConformance`, `conformance_failed` naming the vector).
 *
 * @example
 * ```ts
 * import { checkVectors, computeVectors } from "./conformance.ts";
 * const v = computeVectors();
 * checkVectors(v); // { ok: true }
 * ```
 */
import { canonical, canonicalBytes, type JsonObject, type JsonValue } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError, reject, type Rejection } from "../core/errors.ts";
import { toHexFloat } from "../core/hex_float.ts";
import type { Batch } from "./batch.ts";
import { configToJson, type ModelConfig } from "./config.ts";
import { generate } from "./generation.ts";
import { buildManifest, componentFiles } from "./manifest.ts";
import { cos64, exp64, log64, sin64 } from "./math.ts";
import { initModel } from "./model.ts";
import { writeValue } from "./safetensors.ts";
import { trainStep } from "./step.ts";

/** The format tag of the vectors document. */
export const VECTORS_FORMAT = "neuroshard-kernel-vectors-v1";

/**
 * The model the vectors run: the devnet preset's shape family shrunk until the whole computation takes
 * milliseconds: every linear layer (M·K·N ≥ 8,192) still takes the WebAssembly path when it is on, and
 * none is large enough to start kernel threads (M·K·N < 2^18), which a validator would not otherwise need.
 */
export const CONFORMANCE_CONFIG: ModelConfig = {
  vocab_size: 128,
  hidden_size: 32,
  intermediate_size: 96, // 3 × C, as in the devnet preset
  num_hidden_layers: 2,
  num_attention_heads: 4, // D = 8
  num_key_value_heads: 2, // grouped-query attention, as in the devnet preset
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  max_position_embeddings: 64,
};

const SEED = 1;
const ROWS = 2, TOKENS = 8;
const PROMPT = [1, 2, 3, 4, 5, 6, 7, 8];
const PARTITIONS = [["embed", "norm", "block_000"], ["block_001"]];

/** The fixed batch: ids from a 32-bit LCG, labels the next id (the last position unlabelled). */
function fixedBatch(V: number): Batch {
  let s = 12345;
  const input_ids: number[][] = [], labels: number[][] = [];
  for (let b = 0; b < ROWS; b++) {
    const row: number[] = [];
    for (let t = 0; t < TOKENS; t++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      row.push(s % V);
    }
    input_ids.push(row);
    labels.push([...row.slice(1), -100]);
  }
  return { input_ids, labels };
}

/** SHA-256 of the float32 bits of our exp, log, sin and cos over a fixed grid of 4,096 points each. */
function mathRoot(): string {
  const out = new Float32Array(4 * 4096);
  for (let i = 0; i < 4096; i++) {
    const x = (i - 2048) / 64; // −32 … 32
    out[i] = exp64(x);
    out[4096 + i] = log64((i + 1) / 256);
    out[8192 + i] = sin64(x * 40);
    out[12288 + i] = cos64(x * 40);
  }
  return sha256Hex(new Uint8Array(out.buffer));
}

/** Computes the vectors document from the fixed seeds. */
export function computeVectors(): JsonObject {
  const config = CONFORMANCE_CONFIG;
  const model = initModel(config, SEED);
  const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
  const manifest = buildManifest(config, roots, {
    origin: { kind: "init", seed: SEED },
    tokenizer_root: "0".repeat(64),
  });
  const batch = fixedBatch(config.vocab_size);
  const step = trainStep({
    model,
    manifest,
    batch,
    partitions: PARTITIONS,
    learningRate: 0.05,
    clip: 1,
    step: 0,
  });
  const gen = generate(step.candidate, PROMPT, 4);
  const logits = new Float32Array(gen.logits.length * config.vocab_size);
  gen.logits.forEach((l, i) => logits.set(l, i * config.vocab_size));
  const [t0, t1] = step.traces;
  return {
    format: VECTORS_FORMAT,
    config: configToJson(config),
    seed: SEED,
    batch: sha256Hex(canonicalBytes(batch)),
    model_root: step.record.parent,
    forward: { stage_0_output: t0!.output, head_input: t0!.head_input!, loss: t0!.loss! },
    backward: {
      head_gradient: t0!.head_gradient!,
      stage_1_input_gradient: t1!.gradient_in!,
      norms: step.record.norms,
      scale: toHexFloat(step.scale),
    },
    update: { components: step.candidateManifest.components, model_root: step.candidateRoot },
    generation: {
      prompt: PROMPT,
      tokens: gen.tokens,
      logits: sha256Hex(writeValue({ shape: [gen.logits.length, config.vocab_size], data: logits })),
    },
    math: mathRoot(),
  };
}

/** The first leaf (as a dotted path) where two JSON values differ, or null when they are equal. */
function firstDifference(
  expected: JsonValue | undefined,
  actual: JsonValue | undefined,
  at: string,
): string | null {
  if (canonical(expected ?? null) === canonical(actual ?? null)) return null;
  const object = (v: JsonValue | undefined) => typeof v === "object" && v !== null;
  if (!object(expected) || !object(actual) || Array.isArray(expected) !== Array.isArray(actual)) return at;
  const e = expected as Record<string, JsonValue>, a = actual as Record<string, JsonValue>;
  for (const k of new Set([...Object.keys(a), ...Object.keys(e)])) {
    const d = firstDifference(e[k], a[k], at === "" ? k : `${at}.${k}`);
    if (d !== null) return Array.isArray(actual) ? at : d; // an array differs as a whole (a token list, norms)
  }
  return at;
}

/** A value shortened for a one-line message. */
function brief(v: JsonValue | undefined): string {
  const s = v === undefined ? "nothing" : canonical(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * Compares computed vectors with the pinned ones; `conformance_failed` naming the first differing vector by
 * its path (`forward.stage_0_output`, `generation.tokens`, …) with the computed and the pinned value.
 */
export function checkVectors(
  expected: JsonValue,
  actual: JsonObject = computeVectors(),
): { ok: true } | Rejection {
  const path = firstDifference(expected, actual, "");
  if (path === null) return { ok: true };
  const pick = (v: JsonValue | undefined) =>
    path === "" ? v : path.split(".").reduce<JsonValue | undefined>(
      (o, k) => (typeof o === "object" && o !== null ? (o as Record<string, JsonValue>)[k] : undefined),
      v,
    );
  return reject(
    "conformance_failed",
    `Cannot start: kernels do not reproduce conformance vector ${path === "" ? "(the document)" : path}: ` +
      `computed ${brief(pick(actual))}, pinned ${brief(pick(expected))}`,
  );
}

/**
 * The startup check every role runs (PROTOCOL §10.6): compute the vectors with this process's kernels and
 * throw `ProtocolError("conformance_failed")` naming the first vector that differs from `pinned`. Takes
 * tens of milliseconds (bench/conformance_bench.ts).
 */
export function assertConformance(pinned: JsonValue): void {
  const r = checkVectors(pinned);
  if (!r.ok) throw new ProtocolError(r.code, r.message);
}
