/**
 * Greedy generation with a key/value cache, and the full-prefix recomputation it must equal bit for bit.
 *
 * With a cache, each block keeps the rotated keys and the values of every earlier position; a new token's
 * query attends over them through the same `attentionForward` (masked probabilities add nothing), and every
 * other op is row-wise, so the logits of each step are the same bits as running the whole prefix again.
 *
 * @example
 * ```ts
 * import { generate } from "./generation.ts";
 * import { initModel } from "./model.ts";
 * import { PRESETS } from "./config.ts";
 * const { tokens } = generate(initModel(PRESETS.devnet, 1), [1, 2, 3], 4); // 4 new ids
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { attentionOutput } from "./attention.ts";
import { blockForward, mlpWeightsOf, qkvWeightsOf } from "./block.ts";
import { headDim, type ModelConfig } from "./config.ts";
import { argmax } from "./cross_entropy.ts";
import { decodeHiddenFast } from "./decode_fast.ts";
import { embeddingForward } from "./embedding.ts";
import { headLogits } from "./head.ts";
import { headTokens } from "./head_argmax.ts";
import { linearForward, linearForwardGroup } from "./linear.ts";
import { mlpForward } from "./mlp.ts";
import { blockName, EMBED_TENSOR, type Model } from "./model.ts";
import { addForward } from "./residual.ts";
import { rmsnormOutput } from "./rmsnorm.ts";
import { rotaryForward, type RotaryTables, rotaryTables } from "./rotary.ts";
import type { Tensors } from "./safetensors.ts";
import { FORCE_REFERENCE } from "./matmul.ts";
import { kernelMemory, releaseBlock, residentFloat32, takeBlock } from "./wasm/kernel_memory.ts";

/** The logits [T, V] of every position of one row, computed over the whole row. */
export function forwardLogits(model: Model, ids: readonly number[]): Float32Array {
  const c = model.config, T = ids.length;
  checkLength(c, T);
  const tables = rotaryTables(T, headDim(c), c.rope_theta);
  let x = embeddingForward(
    model.components.embed![EMBED_TENSOR]!.data,
    Int32Array.from(ids),
    c.vocab_size,
    c.hidden_size,
  );
  for (let i = 0; i < c.num_hidden_layers; i++) {
    x = blockForward(x, model.components[blockName(i)]!, c, 1, T, tables).y;
  }
  return headLogits(x, model.components.norm!, model.components.embed!, c, T); // logits: [T,V]
}

function checkLength(c: ModelConfig, T: number): void {
  if (T < 1 || T > c.max_position_embeddings) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot run model: ${T} positions, expected 1..${c.max_position_embeddings}`,
    );
  }
}

/**
 * The cached keys and values of every block: each [capacity, KV], the first `length` rows in use. The
 * capacity grows on demand (`reserve`, doubling, at most `max_position_embeddings`), copying the rows in use,
 * so a short generation does not allocate and zero the model's whole context (for SmolLM2, 8192 positions:
 * 377 MB, which took 24 to 440 ms per cache, with the garbage collector, before the prompt's first matmul).
 * Rows past `length` may hold stale values (draft-and-verify cuts `length` back, and a reused block holds an
 * earlier cache's rows); they are overwritten before they are read.
 *
 * Where the kernels run, every array lives in one reusable block of their memory (`takeBlock`), so attention
 * reads the keys and values where they are instead of copying the whole cache into the kernels' memory for
 * each block of each token (SmolLM2 at 500 positions: 26 µs a block, 0.8 ms a token). `release` gives the
 * block back when the cache's work is done (a cache dropped without it gives it back when collected); past
 * `BLOCK_MAX_BYTES` of blocks, or without the kernels, the arrays are ordinary ones. Either way the bits are
 * the same.
 */
export class KvCache {
  readonly k: Float32Array[] = [];
  readonly v: Float32Array[] = [];
  length = 0;
  #capacity = 0;
  #block: number | null = null;
  #released = false;
  readonly #resident: boolean;
  /** With `resident: false`, the arrays are ordinary ones even where the kernels run. */
  constructor(readonly config: ModelConfig, positions = 64, options: { resident?: boolean } = {}) {
    this.#resident = options.resident ?? true;
    this.#grow(Math.max(1, Math.min(config.max_position_embeddings, positions)));
  }

  /** Positions the arrays hold now. */
  get capacity(): number {
    return this.#capacity;
  }

  /** True when the arrays are in the kernels' memory (read in place by attention). */
  get resident(): boolean {
    return this.#block !== null;
  }

  /** Makes room for `positions` positions (at least doubling, at most the model's context). */
  reserve(positions: number): void {
    if (positions <= this.#capacity) return;
    const c = this.config;
    this.#grow(Math.min(c.max_position_embeddings, Math.max(positions, 2 * this.#capacity)));
  }

  /**
   * Gives the cache's block back for reuse (nothing for ordinary arrays); the cache is empty and unusable
   * after it. Call it when the generation is done, so a later one reuses the block at once.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (this.#block !== null) {
      KV_BLOCKS.unregister(this);
      releaseBlock(this.#block);
      this.#block = null;
    }
    this.k.length = 0;
    this.v.length = 0;
    this.length = 0;
    this.#capacity = 0;
  }

  /** New arrays of `capacity` positions holding the rows in use: in a block when one can be had. */
  #grow(capacity: number): void {
    if (this.#released) throw new Error("Cannot use a released key/value cache");
    const c = this.config, L = c.num_hidden_layers, KV = c.num_key_value_heads * headDim(c);
    const n = capacity * KV, keep = this.length * KV, old = this.#block;
    const km = FORCE_REFERENCE || !this.#resident ? null : kernelMemory();
    const block = km === null ? null : takeBlock(km, 2 * L * 4 * n);
    for (const [half, arrays] of [[0, this.k], [1, this.v]] as const) {
      for (let b = 0; b < L; b++) {
        const grown = block === null
          ? new Float32Array(n)
          : residentFloat32(km!, block + 4 * n * (half * L + b), n);
        if (keep > 0) grown.set(arrays[b]!.subarray(0, keep));
        arrays[b] = grown;
      }
    }
    if (old !== null) {
      KV_BLOCKS.unregister(this);
      releaseBlock(old);
    }
    if (block !== null) KV_BLOCKS.register(this, block, this);
    this.#block = block;
    this.#capacity = capacity;
  }
}

/** Gives back the block of a cache collected without `release`. */
const KV_BLOCKS = new FinalizationRegistry<number>((block) => releaseBlock(block));

function w(p: Tensors, name: string): Float32Array {
  return p[name]!.data;
}

/**
 * Runs Tn new tokens of one block at positions cache.length … with the block's cached keys and values, and
 * returns the outputs of the last `keep` of them (all by default). Every position's key and value is cached;
 * the other positions' queries, attention, projections and MLP are skipped when their outputs are not wanted
 * (the last block of a prompt of which only the next token is wanted: llama.cpp skips them too). Each row is
 * computed alone (row-wise ops, one query's attention over the cached keys), so the rows kept are the bits
 * of running them all.
 */
function blockDecode(
  x: Float32Array,
  p: Tensors,
  c: ModelConfig,
  cache: KvCache,
  layer: number,
  Tn: number,
  tables: RotaryTables,
  keep = Tn,
) {
  const C = c.hidden_size,
    H = c.num_attention_heads,
    KVH = c.num_key_value_heads,
    D = headDim(c),
    KV = KVH * D;
  const at = cache.length, skip = Tn - keep;
  const n1 = rmsnormOutput(x, w(p, "input_layernorm.weight"), Tn, C, c.rms_norm_eps);
  const [wq, wk, wv] = qkvWeightsOf(p);
  // q, k and v in one matmul call when every row's query is wanted; else q of the kept rows alone
  const [qn, kn, v] = skip === 0 ? linearForwardGroup(n1, [wq, wk, wv] as const, Tn, C, [C, KV, KV]) : [
    linearForward(n1.subarray(skip * C), wq, keep, C, C),
    ...linearForwardGroup(n1, [wk, wv] as const, Tn, C, [KV, KV]),
  ];
  const q = rotaryForward(qn, tables, 1, keep, H, D, at + skip); // q: [keep,C]
  const k = rotaryForward(kn, tables, 1, Tn, KVH, D, at); // k: [Tn,KV]
  cache.k[layer]!.set(k, at * KV);
  cache.v[layer]!.set(v, at * KV);
  const Tk = at + Tn;
  const keys = cache.k[layer]!.subarray(0, Tk * KV), values = cache.v[layer]!.subarray(0, Tk * KV);
  const a = attentionOutput(q, keys, values, { B: 1, Tq: keep, Tk, H, KVH, D });
  const h = addForward(x.subarray(skip * C), linearForward(a, w(p, "self_attn.o_proj.weight"), keep, C, C));
  const n2 = rmsnormOutput(h, w(p, "post_attention_layernorm.weight"), keep, C, c.rms_norm_eps);
  return addForward(h, mlpForward(n2, mlpWeightsOf(p), keep, C, c.intermediate_size).y);
}

/**
 * Feeds `ids` at the cache's next positions; returns the logits [Tn, V] (with `lastOnly`, [1, V]: only the last
 * position's, the same bits, for a prompt of which only the next token is wanted; the last block then computes
 * only that position, beside every position's key and value) and advances the cache.
 */
export function decode(
  model: Model,
  cache: KvCache,
  ids: readonly number[],
  tables: RotaryTables,
  lastOnly = false,
): Float32Array {
  return headLogits(...headInputs(model, decodeHidden(model, cache, ids, tables, lastOnly)));
}

/** The head's arguments for the last block's outputs `x` [N, C]: x, the final norm, the embedding, config, N. */
function headInputs(model: Model, x: Float32Array) {
  const { norm, embed } = model.components;
  return [x, norm!, embed!, model.config, x.length / model.config.hidden_size] as const;
}

/**
 * `decode` without the head: the last block's outputs [Tn, C] (with `lastOnly`, [1, C]) that the head reads,
 * the same bits, for a caller that wants only each row's greedy id (`headTokens`). Advances the cache.
 */
export function decodeHidden(
  model: Model,
  cache: KvCache,
  ids: readonly number[],
  tables: RotaryTables,
  lastOnly = false,
): Float32Array {
  const c = model.config, Tn = ids.length;
  checkLength(c, cache.length + Tn);
  cache.reserve(cache.length + Tn);
  if (Tn === 1) {
    const fast = decodeHiddenFast(model, cache, ids[0]!, tables); // the same bits, or null: the path below
    if (fast !== null) return fast;
  }
  let x = embeddingForward(
    model.components.embed![EMBED_TENSOR]!.data,
    Int32Array.from(ids),
    c.vocab_size,
    c.hidden_size,
  );
  const L = c.num_hidden_layers, rows = lastOnly ? 1 : Tn;
  for (let i = 0; i < L; i++) {
    // the last block computes only the rows the head reads; the others are still cached
    x = blockDecode(x, model.components[blockName(i)]!, c, cache, i, Tn, tables, i === L - 1 ? rows : Tn);
  }
  cache.length += Tn;
  return x; // x: [rows,C]
}

/**
 * `decode`'s greedy id of each row ([Tn], with `lastOnly` [1]): `argmax` of its logits, the same ids and
 * errors, by the exact pruned head (`headTokens`), which computes few of the logits.
 */
export function decodeTokens(
  model: Model,
  cache: KvCache,
  ids: readonly number[],
  tables: RotaryTables,
  lastOnly = false,
): Int32Array {
  return headTokens(...headInputs(model, decodeHidden(model, cache, ids, tables, lastOnly)));
}

/** The rotary tables and the cache of a greedy generation of up to `maxNew` ids after `prompt`. */
function generationState(c: ModelConfig, prompt: readonly number[], maxNew: number) {
  checkLength(c, prompt.length + maxNew - 1);
  // Only the positions this generation can reach: a position's values do not depend on how many the tables
  // hold, and the model's whole context (8192 positions for SmolLM2) takes 25-130 ms to build.
  const positions = Math.min(c.max_position_embeddings, prompt.length + maxNew);
  const tables = rotaryTables(positions, headDim(c), c.rope_theta);
  return { tables, cache: new KvCache(c, positions) }; // every position this generation can need
}

/** The result of greedy generation: the new ids and the logits [V] that chose each one. */
export interface Generation {
  readonly tokens: number[];
  readonly logits: Float32Array[];
}

/** Greedy generation with a cache: up to `maxNew` ids, stopping after `eos` when given. */
export function generate(model: Model, prompt: readonly number[], maxNew: number, eos?: number): Generation {
  const V = model.config.vocab_size, { tables, cache } = generationState(model.config, prompt, maxNew);
  const tokens: number[] = [], logits: Float32Array[] = [];
  try {
    let out = decode(model, cache, prompt, tables, true); // the prompt's last position chooses the first id
    for (let s = 0; s < maxNew; s++) {
      const last = out.slice((out.length / V - 1) * V); // last: [V]
      const next = argmax(last, 1, V)[0]!;
      tokens.push(next);
      logits.push(last);
      if (next === eos || s === maxNew - 1) break;
      out = decode(model, cache, [next], tables);
    }
  } finally {
    cache.release();
  }
  return { tokens, logits };
}

/**
 * `generate`'s tokens alone: the same ids (and the same errors), chosen by the exact pruned head
 * (`headTokens`) instead of every logit, for callers that do not keep the logits (a Provider's answer).
 */
export function generateTokens(
  model: Model,
  prompt: readonly number[],
  maxNew: number,
  eos?: number,
): number[] {
  const { tables, cache } = generationState(model.config, prompt, maxNew);
  const tokens: number[] = [];
  try {
    let next = decodeTokens(model, cache, prompt, tables, true)[0]!;
    for (let s = 0; s < maxNew; s++) {
      tokens.push(next);
      if (next === eos || s === maxNew - 1) break;
      next = decodeTokens(model, cache, [next], tables)[0]!;
    }
  } finally {
    cache.release();
  }
  return tokens;
}

/** Greedy generation by recomputing the whole prefix at every step (the definition `generate` must equal). */
export function generateByRecompute(
  model: Model,
  prompt: readonly number[],
  maxNew: number,
  eos?: number,
): Generation {
  const V = model.config.vocab_size;
  const ids = [...prompt], tokens: number[] = [], logits: Float32Array[] = [];
  for (let s = 0; s < maxNew; s++) {
    const all = forwardLogits(model, ids);
    const last = all.slice((ids.length - 1) * V);
    const next = argmax(last, 1, V)[0]!;
    tokens.push(next);
    logits.push(last);
    ids.push(next);
    if (next === eos) break;
  }
  return { tokens, logits };
}
