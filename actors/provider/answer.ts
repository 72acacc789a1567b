/**
 * The Provider's computation of one answer (PROTOCOL §8.1): greedy generation with the pinned model and the
 * deterministic kernels (`kernels/generation.ts`, the existing entry point), then the generation record from
 * one prefill over prompt + output, split by partition. Every activation the record commits is stored in the
 * provider's object store, so it can answer availability challenges. With `forge: "token"` (tests and the
 * devnet) the first generated token is replaced by another id and the rest generated honestly after it: the
 * record then passes every graph check and only the head referee can refute it.
 *
 * @example
 * ```ts
 * import { computeAnswer } from "./answer.ts";
 * // const a = await computeAnswer(store, models, { model_root, prompt_ids: [1, 2, 3], max_tokens: 8, eos_id: 2 }, null, null);
 * // a.tokens, a.record_root, a.metadata
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { ObjectStore } from "../../core/object_store.ts";
import { makeModelResident } from "../../kernels/block.ts";
import { generateTokens } from "../../kernels/generation.ts";
import { generationRecord } from "../../kernels/generation_record.ts";
import { loadModel, type Manifest } from "../../kernels/manifest.ts";
import { blockName, type Model, modelParameters } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { scratchBase } from "../../kernels/wasm/kernel_memory.ts";
import { responseMetadata } from "../../ledger/inference/wire.ts";

/** What the provider may forge (tests and the devnet only). */
export type ProviderForge = "token" | null;

/** The job facts an answer needs. */
export interface AnswerInput {
  readonly model_root: string;
  readonly prompt_ids: readonly number[];
  readonly max_tokens: number;
  readonly eos_id: number | null;
}

/** A computed answer, as journaled before it is submitted. */
export interface Answer extends JsonObject {
  tokens: number[];
  record_root: string;
  metadata: JsonObject;
  forged: boolean;
  compute_ms: number;
}

/**
 * At most this many bytes of the kernels' memory hold resident models (`makeModelResident`): that memory is
 * never given back and ends at 4 GiB, so a provider that has made this much resident loads later models
 * without it (the same bits, decoded without prepacked panels and grouped calls).
 */
export const RESIDENT_MAX_BYTES = 2 ** 31;

/**
 * Models loaded from the store, by root (a provider serves one or two models at a time). With `resident` (the
 * default) each model is made resident as it is loaded (`makeModelResident`: its weights moved into the kernels'
 * memory and prepacked, as `deno task generate` does, about twice its float32 bytes, never given back), while
 * the kernels' resident region stays within `RESIDENT_MAX_BYTES`; its answers are the same bits either way.
 */
export class ModelCache {
  readonly #models = new Map<string, Model & { manifest: Manifest }>();
  constructor(readonly store: ObjectStore, readonly limit = 2, readonly resident = true) {}

  /** The model under `root`, loaded once. */
  async get(root: string): Promise<Model & { manifest: Manifest }> {
    let m = this.#models.get(root);
    if (!m) {
      if (!(await this.store.has(root))) {
        throw new ProtocolError(
          "object_not_found",
          `Cannot answer: model ${root} is not in the provider's store`,
        );
      }
      m = await loadModel(this.store, root);
      if (this.resident && scratchBase() + residentBytes(m) <= RESIDENT_MAX_BYTES) {
        makeModelResident(m.components);
      }
      if (this.#models.size >= this.limit) this.#models.delete(this.#models.keys().next().value!);
      this.#models.set(root, m);
    }
    return m;
  }
}

/** Generates, records and stores one answer; `capacities` split it by partition (default one partition). */
export async function computeAnswer(
  models: ModelCache,
  input: AnswerInput,
  forge: ProviderForge,
  capacities: readonly number[] | null,
): Promise<Answer> {
  const started = performance.now();
  const model = await models.get(input.model_root);
  const c = model.config;
  let tokens = generateTokens(model, input.prompt_ids, input.max_tokens, input.eos_id ?? undefined);
  if (forge === "token") {
    let first = (tokens[0]! + 1) % c.vocab_size;
    if (first === input.eos_id) first = (first + 1) % c.vocab_size;
    const rest = input.max_tokens > 1
      ? generateTokens(model, [...input.prompt_ids, first], input.max_tokens - 1, input.eos_id ?? undefined)
      : [];
    tokens = [first, ...rest];
  }
  const partitions = capacities === null ? [whole(model)] : place(c, capacities);
  const proof = generationRecord(
    model,
    input.model_root,
    input.prompt_ids,
    tokens,
    { max_tokens: input.max_tokens, eos_id: input.eos_id },
    partitions,
  );
  if (forge === null && proof.computed.join(",") !== tokens.join(",")) {
    throw new ProtocolError(
      "internal_error",
      `Cannot answer: the prefill chose ${proof.computed.join(",")}, generation ${tokens.join(",")}`,
    );
  }
  for (const bytes of proof.objects.values()) await models.store.put(bytes);
  return {
    tokens,
    record_root: proof.recordRoot,
    metadata: responseMetadata(proof),
    forged: forge !== null,
    compute_ms: Math.round(performance.now() - started),
  };
}

/** One partition holding the whole model: embed, norm, then every block. */
function whole(model: Model): string[] {
  return ["embed", "norm", ...Array.from({ length: model.config.num_hidden_layers }, (_, i) => blockName(i))];
}

/**
 * What `makeModelResident` adds to the kernels' memory for `model`, at most: its float32 bytes twice (values
 * and panels), 1.25 bytes a parameter of code panels (`kernels/wasm/code_panels.ts`: a quantised import's
 * weights), and per matrix (seven a block and the embedding) up to 12 rows of panel padding and alignment.
 */
function residentBytes(model: Model): number {
  const c = model.config, matrices = 7 * c.num_hidden_layers + 1;
  return Math.ceil(9.25 * modelParameters(c)) +
    matrices * (48 * Math.max(c.hidden_size, c.intermediate_size) + 192);
}
