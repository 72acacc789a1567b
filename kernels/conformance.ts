/**
 * Conformance vectors (PROTOCOL §10.6): fixed seeds in, expected roots out — a forward, a backward, an
 * update and a 4-token generation on the devnet preset, plus a grid of our transcendental functions. Genesis
 * pins them (`genesis/vectors/kernels.json`, written by `deno task kernels:vectors`) and a node refuses to
 * start when its kernels do not reproduce them (`conformance_failed`).
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
import { reject, type Rejection } from "../core/errors.ts";
import { toHexFloat } from "../core/hex_float.ts";
import type { Batch } from "./batch.ts";
import { configToJson, PRESETS } from "./config.ts";
import { generate } from "./generation.ts";
import { buildManifest, componentFiles } from "./manifest.ts";
import { cos64, exp64, log64, sin64 } from "./math.ts";
import { initModel } from "./model.ts";
import { writeValue } from "./safetensors.ts";
import { trainStep } from "./step.ts";

/** The format tag of the vectors document. */
export const VECTORS_FORMAT = "neuroshard-kernel-vectors-v1";

const SEED = 1;
const ROWS = 2, TOKENS = 16;
const PROMPT = [1, 2, 3, 4, 5, 6, 7, 8];
const PARTITIONS = [["embed", "norm", "block_000"], ["block_001", "block_002", "block_003"]];

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
  const config = PRESETS.devnet;
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

/** Compares computed vectors with the pinned ones; `conformance_failed` naming the first differing entry. */
export function checkVectors(
  expected: JsonValue,
  actual: JsonObject = computeVectors(),
): { ok: true } | Rejection {
  if (canonical(expected) === canonical(actual)) return { ok: true };
  const e = (expected ?? {}) as JsonObject;
  const key = Object.keys(actual).find((k) => canonical(e[k] ?? null) !== canonical(actual[k]!)) ?? "format";
  return reject(
    "conformance_failed",
    `Cannot start: kernels do not reproduce the conformance vectors at ${key}: ${
      canonical(actual[key] ?? null).slice(0, 200)
    }`,
  );
}
