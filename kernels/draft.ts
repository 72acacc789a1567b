/**
 * The drafter of draft-and-verify generation (`draft_verify.ts`): a NON-CONSENSUS, int8-quantised copy of the
 * model (`wasm/draft_wasm.ts`, Q8_0 blocks of 32, about a quarter of the float32 weights' bytes) that
 * proposes the next few greedy tokens quickly. It attends over the verifier's own float32 key/value cache
 * for every confirmed position, so it needs no prompt processing of its own, and keeps approximate keys and
 * values only for the positions it is drafting (`DraftCache`, which copies each confirmed position once).
 * Whatever it proposes, the deterministic kernels decide.
 *
 * @example
 * ```ts
 * import { Q8Drafter } from "./draft.ts";
 * // const drafter = new Q8Drafter(model);           // quantises once (a second or two for SmolLM2)
 * // drafter.draft(cache, nextToken, 6)              // up to 6 proposed ids after nextToken
 * ```
 * @module
 */

import { attentionForward } from "./attention.ts";
import { headDim, type ModelConfig } from "./config.ts";
import type { KvCache } from "./generation.ts";
import { blockName, EMBED_TENSOR, type Model, NORM_TENSOR } from "./model.ts";
import { rmsnormForward } from "./rmsnorm.ts";
import { rotaryForward, type RotaryTables, rotaryTables } from "./rotary.ts";
import { type Q8Matrix, q8Matvec, quantiseQ8 } from "./wasm/draft_wasm.ts";
import { sharedHeadQ8 } from "./head_argmax.ts";

/** What proposes tokens: up to `k` ids that greedy decoding might produce after `next`. */
export interface Drafter {
  /**
   * Proposes up to `k` ids following `next`, where `cache` holds the confirmed positions (`cache.length` of
   * them) and `next` is the token at position `cache.length`. Any answer is safe: it is only verified.
   */
  draft(cache: KvCache, next: number, k: number): number[];
}

/**
 * A drafter's keys and values per block ([positions, KV]): the verifier's exact rows for the confirmed
 * positions, then the drafter's own rows for the positions it drafts. Rows are copied from the verifier's
 * cache only as they become confirmed; a different cache, or a shorter one, is copied whole. So it assumes
 * what `Drafter` promises: a confirmed position never changes (were one to change, only the acceptance
 * would suffer).
 */
export class DraftCache {
  /** Keys per block, [positions, KV]; an array is replaced when it grows (doubling). */
  readonly k: Float32Array[];
  /** Values per block, as `k`. */
  readonly v: Float32Array[];
  readonly #c: ModelConfig;
  #cache: WeakRef<KvCache> | null = null;
  #synced = 0;

  constructor(config: ModelConfig) {
    this.#c = config;
    this.k = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(0));
    this.v = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(0));
  }

  /**
   * Up to `k` ids after `next` (at position `cache.length`): takes the positions of `cache` confirmed since
   * the last call, makes room for the drafted ones and calls `step(token, position)` for each, which writes
   * that position's rows and returns the next id.
   */
  draft(cache: KvCache, next: number, k: number, step: (token: number, pos: number) => number): number[] {
    const c = this.#c, L = cache.length, KV = c.num_key_value_heads * headDim(c);
    const n = Math.max(0, Math.min(k, c.max_position_embeddings - L - 1));
    if (this.#cache?.deref() !== cache || L < this.#synced) this.#synced = 0; // another answer: copy it all
    this.#cache = new WeakRef(cache);
    const need = (L + n + 1) * KV, from = this.#synced * KV;
    for (let b = 0; b < this.k.length; b++) {
      if (this.k[b]!.length < need) {
        const size = Math.min(c.max_position_embeddings * KV, Math.max(need, 2 * this.k[b]!.length));
        const [k, v] = [new Float32Array(size), new Float32Array(size)];
        k.set(this.k[b]!.subarray(0, from));
        v.set(this.v[b]!.subarray(0, from));
        this.k[b] = k;
        this.v[b] = v;
      }
      // positions confirmed since the last call: the verifier's exact keys and values replace the drafts
      this.k[b]!.set(cache.k[b]!.subarray(from, L * KV), from);
      this.v[b]!.set(cache.v[b]!.subarray(from, L * KV), from);
    }
    this.#synced = L;
    const out: number[] = [];
    for (let i = 0, token = next; i < n; i++) out.push(token = step(token, L + i));
    return out;
  }
}

interface DraftBlock {
  readonly q: Q8Matrix;
  readonly k: Q8Matrix;
  readonly v: Q8Matrix;
  readonly o: Q8Matrix;
  readonly gate: Q8Matrix;
  readonly up: Q8Matrix;
  readonly down: Q8Matrix;
  readonly norm1: Float32Array;
  readonly norm2: Float32Array;
}

/** The int8 drafter; see the module documentation. */
export class Q8Drafter implements Drafter {
  readonly #c: ModelConfig;
  readonly #embed: Float32Array;
  readonly #head: Q8Matrix;
  readonly #norm: Float32Array;
  readonly #blocks: DraftBlock[];
  readonly #tables: RotaryTables;
  readonly #kv: DraftCache;

  /**
   * Quantises every matrix of `model` into the kernels' resident memory (once; it is never freed); the head
   * of a resident model is the exact pruned head's own int8 copy (`sharedHeadQ8`), not a second one.
   */
  constructor(model: Model) {
    const c = model.config, C = c.hidden_size, I = c.intermediate_size, D = headDim(c);
    const KV = c.num_key_value_heads * D;
    this.#c = c;
    this.#embed = model.components.embed![EMBED_TENSOR]!.data;
    // the exact pruned head's copy when the model is resident (the same blocks), else its own
    this.#head = sharedHeadQ8(this.#embed, c.vocab_size, C) ?? quantiseQ8(this.#embed, c.vocab_size, C);
    this.#norm = model.components.norm![NORM_TENSOR]!.data;
    this.#blocks = [];
    for (let i = 0; i < c.num_hidden_layers; i++) {
      const p = model.components[blockName(i)]!;
      const m = (name: string, rows: number, cols: number) => quantiseQ8(p[name]!.data, rows, cols);
      this.#blocks.push({
        q: m("self_attn.q_proj.weight", C, C),
        k: m("self_attn.k_proj.weight", KV, C),
        v: m("self_attn.v_proj.weight", KV, C),
        o: m("self_attn.o_proj.weight", C, C),
        gate: m("mlp.gate_proj.weight", I, C),
        up: m("mlp.up_proj.weight", I, C),
        down: m("mlp.down_proj.weight", C, I),
        norm1: p["input_layernorm.weight"]!.data,
        norm2: p["post_attention_layernorm.weight"]!.data,
      });
    }
    this.#tables = rotaryTables(c.max_position_embeddings, D, c.rope_theta);
    this.#kv = new DraftCache(c);
  }

  /** True when `model` can be drafted for (every matrix width a multiple of 32, int8 kernels available). */
  static supports(model: Model): boolean {
    const c = model.config;
    return c.hidden_size % 32 === 0 && c.intermediate_size % 32 === 0;
  }

  draft(cache: KvCache, next: number, k: number): number[] {
    return this.#kv.draft(cache, next, k, (token, pos) => this.#step(token, pos));
  }

  /** Runs `token` at position `pos` through the int8 model; returns its greedy successor. */
  #step(token: number, pos: number): number {
    const c = this.#c, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads;
    const KVH = c.num_key_value_heads, D = headDim(c), KV = KVH * D;
    let x = this.#embed.slice(token * C, (token + 1) * C);
    const q = new Float32Array(C), kx = new Float32Array(KV), vx = new Float32Array(KV);
    const o = new Float32Array(C), g = new Float32Array(I), u = new Float32Array(I), d = new Float32Array(C);
    for (let b = 0; b < this.#blocks.length; b++) {
      const w = this.#blocks[b]!;
      const n1 = rmsnormForward(x, w.norm1, 1, C, c.rms_norm_eps).y;
      q8Matvec(w.q, n1, q);
      q8Matvec(w.k, n1, kx);
      q8Matvec(w.v, n1, vx);
      const qr = rotaryForward(q, this.#tables, 1, 1, H, D, pos);
      this.#kv.k[b]!.set(rotaryForward(kx, this.#tables, 1, 1, KVH, D, pos), pos * KV);
      this.#kv.v[b]!.set(vx, pos * KV);
      const Tk = pos + 1;
      const keys = this.#kv.k[b]!.subarray(0, Tk * KV), values = this.#kv.v[b]!.subarray(0, Tk * KV);
      const a = attentionForward(qr, keys, values, { B: 1, Tq: 1, Tk, H, KVH, D }).out;
      q8Matvec(w.o, a, o);
      for (let i = 0; i < C; i++) o[i] = x[i]! + o[i]!;
      const n2 = rmsnormForward(o, w.norm2, 1, C, c.rms_norm_eps).y;
      q8Matvec(w.gate, n2, g);
      q8Matvec(w.up, n2, u);
      for (let i = 0; i < I; i++) g[i] = (g[i]! / (1 + Math.exp(-g[i]!))) * u[i]!;
      q8Matvec(w.down, g, d);
      x = new Float32Array(C);
      for (let i = 0; i < C; i++) x[i] = o[i]! + d[i]!;
    }
    const logits = new Float32Array(c.vocab_size);
    q8Matvec(this.#head, rmsnormForward(x, this.#norm, 1, C, c.rms_norm_eps).y, logits);
    let best = 0;
    for (let j = 1; j < logits.length; j++) if (logits[j]! > logits[best]!) best = j;
    return best;
  }
}
