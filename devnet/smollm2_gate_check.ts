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
import { planSmollm2Cohorts } from "./smollm2_cohort_plan.ts";
import { generate } from "../kernels/generation.ts";
import { encodePrompt } from "../text/conversation.ts";
import { TextCodec } from "../text/codec.ts";
import { buildCodec } from "../text/codec_manifest.ts";
import { SMOLLM2_CURATOR_WINDOWS } from "../genesis/devnet/smollm2_build.ts";
import { documentBatches } from "../actors/curator/windows.ts";
import {
  documentLoss,
  FRESH_MARGIN,
  type GateResult,
  groupGate,
  microQ,
  RETENTION_MARGIN,
} from "../workflows/gate.ts";
import { DEVNET_SOURCE, devnetRow, devnetRows, GENERATOR_VERSION } from "../genesis/devnet/generator.ts";
import { DEVNET_TOKENIZER_ROWS } from "../genesis/devnet/codec.ts";
import {
  SMOLLM2_CAPACITY,
  SMOLLM2_CLIP,
  SMOLLM2_GROWTH_BLOCKS,
  SMOLLM2_LEARNING_RATE,
} from "../genesis/devnet/smollm2_contents.ts";

/** One group's gate and the per-document losses behind it. */
export interface GroupCheck extends GateResult {
  readonly n: number;
  readonly baseline: number[];
  readonly candidate: number[];
}

/** A window's response targets (labels other than −100). */
export function windowTargets(batch: Batch): number {
  return batch.labels.flat().filter((l) => l !== -100).length;
}

/**
 * The first `count` usable documents' windows of a generator seed (evaluation documents must be complete;
 * with `minTargets`, documents whose first window has fewer targets are skipped, as the Curator does).
 */
function documents(
  codec: TextCodec,
  seed: string,
  first: number,
  count: number,
  evaluation: boolean,
  minTargets = 0,
): Batch[][] {
  const out: Batch[][] = [];
  for (let row = first; out.length < count; row += 64) {
    for (const messages of devnetRows({ generator: GENERATOR_VERSION, seed }, row, 64)) {
      if (out.length >= count) break;
      try {
        const { batches } = documentBatches(codec, messages, SMOLLM2_CURATOR_WINDOWS, evaluation);
        if (windowTargets(batches[0]!) >= minTargets) out.push(batches);
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

/** A recipe to check: the training windows' minimum targets and the learning rate. */
export interface GateRecipe {
  /**
   * Skip training documents whose window has fewer response targets (default 0: the first two); with
   * `cohorts`, the Curator's screening rule `min_targets` (every row of every source).
   */
  readonly minTargets?: number;
  /** The SGD learning rate (default the genesis `SMOLLM2_LEARNING_RATE`). */
  readonly learningRate?: number;
  /** The train source's rows (generator seed `devnet-0`) whose first windows the two steps train on. */
  readonly trainRows?: readonly number[];
  /**
   * Train and gate as the network with the data lifecycle does (`smollm2_cohort_plan.ts`): the honest step on
   * the first cohort's scheduled window, the grown step on the second's, gated on the second cohort's
   * evaluation documents (`sizes` and `skip` then select among those).
   */
  readonly cohorts?: boolean;
  /** With `cohorts`: the retention and fresh documents a cohort carries (default 8). */
  readonly evaluationDocuments?: number;
  /** Also answer `ANSWER_PROMPT` greedily with the trained, grown candidate (default false). */
  readonly answer?: boolean;
}

/** The question the final model must still answer with Paris. */
export const ANSWER_PROMPT = "What is the capital of France?";

/** Trains as the scenario does and gates the first `n` documents of each role for each n of `sizes`. */
export async function smollm2GateCheck(
  gguf: string,
  sizes: readonly number[],
  skip = 0,
  recipe: GateRecipe = {},
) {
  const parsed = readGguf(await Deno.readFile(gguf));
  const t = tokenizerFromGguf(parsed);
  const built = buildCodec(t.tokenizer, t.chatTemplate, t.special);
  const codec = TextCodec.fromParts(built.manifest as unknown as JsonValue, built.backend, built.root);
  const genesis = modelFromGguf(parsed);
  const most = Math.max(...sizes) + skip;
  const plan = recipe.cohorts
    ? planSmollm2Cohorts(
      codec,
      SMOLLM2_CURATOR_WINDOWS,
      2,
      1,
      recipe.evaluationDocuments ?? 8,
      recipe.minTargets ?? 0,
    )
    : null;
  const retention = plan ? plan[1]!.retention : documents(codec, "devnet-retention", 0, most, true);
  const fresh = plan ? plan[1]!.fresh : documents(codec, "devnet-fresh", 0, most, true);
  const train = plan
    ? plan.map((c) => c.schedule[0]!)
    : recipe.trainRows
    ? recipe.trainRows.map((row) =>
      documentBatches(codec, devnetRow(DEVNET_SOURCE, row), SMOLLM2_CURATOR_WINDOWS, false).batches[0]!
    )
    : documents(codec, "devnet-0", DEVNET_TOKENIZER_ROWS, 2, false, recipe.minTargets ?? 0).map((d) => d[0]!);
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
      learningRate: recipe.learningRate ?? SMOLLM2_LEARNING_RATE,
      clip: SMOLLM2_CLIP,
      step: i,
    });
    losses.push(out.loss);
    model = out.candidate;
  }
  const candRet = documentLosses(model, retention), candFresh = documentLosses(model, fresh);
  let answer: string | null = null;
  if (recipe.answer) {
    const prompt = encodePrompt(codec, [{ role: "user", content: ANSWER_PROMPT }]);
    const eos = codec.manifest.special_ids.eos;
    const ids = generate(model, prompt, 24, eos).tokens.filter((t) => t !== eos);
    answer = codec.decode(ids);
  }
  return {
    cohorts: plan?.map((c) => c.root) ?? null,
    train_targets: train.map(windowTargets),
    train_text: train.map((b) => codec.decode(b.input_ids[0]!.filter((_, t) => b.labels[0]![t] !== -100))),
    learning_rate: recipe.learningRate ?? SMOLLM2_LEARNING_RATE,
    answer,
    step_losses: losses,
    groups: sizes.map((n) => ({
      n,
      retention: gate(baseRet.slice(skip, skip + n), candRet.slice(skip, skip + n), RETENTION_MARGIN),
      fresh: gate(baseFresh.slice(skip, skip + n), candFresh.slice(skip, skip + n), FRESH_MARGIN),
    })),
  };
}

const USAGE = `usage: deno run -A devnet/smollm2_gate_check.ts GGUF [N ...] [--skip K] [--min-targets T]
       [--rate-log2 R] [--train-rows A,B] [--cohorts [--eval-docs E]] [--answer]

Trains SmolLM2 as the SmolLM2 devnet's scenario does and prints, as one JSON object, the step losses and the
gate (S, Q, G, pass, per-document losses) of the retention and fresh groups of N documents (default 2 4 8),
after skipping the first K usable documents of each source (default 0), at the learning rate 2^-R (default 6,
the genesis rate). The two training windows are:
  - the first two train documents whose window has at least T response targets (default 0), or
  - (--train-rows) the first windows of train rows A and B (generator seed devnet-0), or
  - (--cohorts) the windows the network's first two cohorts schedule, a Curator screening rows by
    min_targets T, gated on the second cohort's E retention and E fresh documents (default 8).
--answer adds the trained, grown model's greedy answer to "${ANSWER_PROMPT}".`;

if (import.meta.main) {
  const args = [...Deno.args];
  if (args.includes("--help")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const flag = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    return at < 0 ? fallback : Number(args.splice(at, 2)[1]);
  };
  const evaluationDocuments = flag("--eval-docs", 8);
  const skip = flag("--skip", 0), minTargets = flag("--min-targets", 0), rateLog2 = flag("--rate-log2", 6);
  const rowsAt = args.indexOf("--train-rows");
  const trainRows = rowsAt < 0 ? undefined : args.splice(rowsAt, 2)[1]!.split(",").map(Number);
  const bool = (name: string) => {
    const at = args.indexOf(name);
    if (at >= 0) args.splice(at, 1);
    return at >= 0;
  };
  const answer = bool("--answer"), cohorts = bool("--cohorts");
  const sizes = args.slice(1).map(Number);
  if (
    args.length < 1 || !Number.isSafeInteger(skip) || skip < 0 || !Number.isSafeInteger(minTargets) ||
    !Number.isSafeInteger(rateLog2) || rateLog2 < 0 ||
    (trainRows !== undefined &&
      (trainRows.length !== 2 || trainRows.some((r) => !Number.isSafeInteger(r)))) ||
    sizes.some((n) => !Number.isSafeInteger(n) || n < 2)
  ) {
    console.error(USAGE);
    Deno.exit(2);
  }
  const r = await smollm2GateCheck(args[0]!, sizes.length ? sizes : [2, 4, 8], skip, {
    minTargets,
    ...(trainRows ? { trainRows } : {}),
    cohorts,
    evaluationDocuments,
    learningRate: 2 ** -rateLog2,
    answer,
  });
  console.log(JSON.stringify(r));
}
