/**
 * The SmolLM2 devnet's gate, checked in-process before a network runs it: the imported SmolLM2 (the devnet's
 * genesis model) trained exactly as the scenario trains it — one SGD step, a growth by four identity blocks,
 * one more step, each on one window the SmolLM2 codec cut (64 prompt, 64 target tokens) from the devnet's
 * train source, at the genesis learning rate and clip — and the ledger's own gate (`workflows/gate.ts`)
 * applied to the window losses of the first `n` usable rows of the retention and the fresh sources, candidate
 * against the genesis model, exactly as an evaluation's scores commit them (`kernels/score_record.ts`).
 *
 * Run: `deno run -A devnet/smollm2_gate_check.ts GGUF [N ...] [--skip K]` (prints one JSON object).
 *
 * @example
 * ```ts
 * import { smollm2GateCheck } from "./smollm2_gate_check.ts";
 * // const r = await smollm2GateCheck(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf", [2]);
 * ```
 */
import type { JsonValue } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import type { Batch } from "../kernels/batch.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../kernels/gguf_tokenizer.ts";
import { growModel } from "../kernels/growth.ts";
import { buildManifest, componentFiles } from "../kernels/manifest.ts";
import { componentNames, type Model } from "../kernels/model.ts";
import { place } from "../kernels/placement.ts";
import { scoreRecord } from "../kernels/score_record.ts";
import { trainStep } from "../kernels/step.ts";
import { TextCodec } from "../text/codec.ts";
import { buildCodec } from "../text/codec_manifest.ts";
import type { WindowOptions } from "../text/windows.ts";
import { documentBatches } from "../actors/curator/windows.ts";
import {
  documentLoss,
  FRESH_MARGIN,
  type GateResult,
  groupGate,
  microQ,
  RETENTION_MARGIN,
} from "../workflows/gate.ts";
import { devnetRows, GENERATOR_VERSION } from "../genesis/devnet/generator.ts";
import { DEVNET_TOKENIZER_ROWS } from "../genesis/devnet/codec.ts";
import {
  SMOLLM2_CAPACITY,
  SMOLLM2_CLIP,
  SMOLLM2_GROWTH_BLOCKS,
  SMOLLM2_LEARNING_RATE,
} from "../genesis/devnet/smollm2_contents.ts";

/** The windows a SmolLM2 Curator would cut: one window of 64 prompt and 64 target tokens per document. */
export const SMOLLM2_CURATOR_WINDOWS: WindowOptions = { context: 64, response: 64, maxWindows: 1 };

/** One group's gate and the per-document losses behind it. */
export interface GroupCheck extends GateResult {
  readonly n: number;
  readonly baseline: number[];
  readonly candidate: number[];
}

/** The first `count` usable documents' windows of a generator seed (evaluation documents must be complete). */
function documents(
  codec: TextCodec,
  seed: string,
  first: number,
  count: number,
  evaluation: boolean,
): Batch[][] {
  const out: Batch[][] = [];
  for (let row = first; out.length < count; row += 64) {
    for (const messages of devnetRows({ generator: GENERATOR_VERSION, seed }, row, 64)) {
      if (out.length >= count) break;
      try {
        out.push(documentBatches(codec, messages, SMOLLM2_CURATOR_WINDOWS, evaluation).batches);
      } catch { /* an incomplete evaluation document: the curator skips it too */ }
    }
  }
  return out;
}

function manifestOf(model: Model, tokenizerRoot: string) {
  const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
  return buildManifest(model.config, roots, { origin: { format: "gguf" }, tokenizer_root: tokenizerRoot });
}

/** Each document's loss under `model` (windows scored 4 at a time, as score claims are). */
function documentLosses(model: Model, docs: readonly Batch[][]): number[] {
  const whole = [componentNames(model.config)];
  return docs.map((windows) => {
    const parts: { loss: number; targets: number }[] = [];
    for (let i = 0; i < windows.length; i += 4) {
      const proof = scoreRecord(model, "0".repeat(64), windows.slice(i, i + 4), whole);
      proof.computed.losses.forEach((loss, k) => parts.push({ loss, targets: proof.computed.targets[k]! }));
    }
    return documentLoss(parts);
  });
}

function gate(base: number[], cand: number[], margin: bigint): GroupCheck {
  const r = groupGate(base.map(microQ), cand.map(microQ), margin);
  return { ...r, n: base.length, baseline: base, candidate: cand };
}

/** Trains as the scenario does and gates the first `n` documents of each role for each n of `sizes`. */
export async function smollm2GateCheck(gguf: string, sizes: readonly number[], skip = 0) {
  const parsed = readGguf(await Deno.readFile(gguf));
  const t = tokenizerFromGguf(parsed);
  const built = buildCodec(t.tokenizer, t.chatTemplate, t.special);
  const codec = TextCodec.fromParts(built.manifest as unknown as JsonValue, built.backend, built.root);
  const genesis = modelFromGguf(parsed);
  const most = Math.max(...sizes) + skip;
  const retention = documents(codec, "devnet-retention", 0, most, true);
  const fresh = documents(codec, "devnet-fresh", 0, most, true);
  const train = documents(codec, "devnet-0", DEVNET_TOKENIZER_ROWS, 2, false).map((d) => d[0]!);
  const baseRet = documentLosses(genesis, retention), baseFresh = documentLosses(genesis, fresh);
  const losses: number[] = [];
  let model = genesis;
  for (const [i, batch] of train.entries()) {
    if (i === 1) model = growModel(model, SMOLLM2_GROWTH_BLOCKS);
    const partitions = place(model.config, [
      SMOLLM2_CAPACITY,
      SMOLLM2_CAPACITY,
      SMOLLM2_CAPACITY,
      SMOLLM2_CAPACITY,
    ]);
    const out = trainStep({
      model,
      manifest: manifestOf(model, built.root),
      batch,
      partitions,
      learningRate: SMOLLM2_LEARNING_RATE,
      clip: SMOLLM2_CLIP,
      step: i,
    });
    losses.push(out.loss);
    model = out.candidate;
  }
  const candRet = documentLosses(model, retention), candFresh = documentLosses(model, fresh);
  return {
    step_losses: losses,
    groups: sizes.map((n) => ({
      n,
      retention: gate(baseRet.slice(skip, skip + n), candRet.slice(skip, skip + n), RETENTION_MARGIN),
      fresh: gate(baseFresh.slice(skip, skip + n), candFresh.slice(skip, skip + n), FRESH_MARGIN),
    })),
  };
}

const USAGE = `usage: deno run -A devnet/smollm2_gate_check.ts GGUF [N ...] [--skip K]

Trains SmolLM2 as the SmolLM2 devnet's scenario does and prints, as one JSON object, the step losses and the
gate (S, Q, G, pass, per-document losses) of the retention and fresh groups of N documents (default 2 4 8),
after skipping the first K usable documents of each source (default 0).`;

if (import.meta.main) {
  const args = [...Deno.args];
  if (args.includes("--help")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const at = args.indexOf("--skip");
  const skip = at < 0 ? 0 : Number(args.splice(at, 2)[1]);
  const sizes = args.slice(1).map(Number);
  if (
    args.length < 1 || !Number.isSafeInteger(skip) || skip < 0 ||
    sizes.some((n) => !Number.isSafeInteger(n) || n < 2)
  ) {
    console.error(USAGE);
    Deno.exit(2);
  }
  const r = await smollm2GateCheck(args[0]!, sizes.length ? sizes : [2, 4, 8], skip);
  console.log(JSON.stringify(r));
}
