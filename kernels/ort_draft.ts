/**
 * A NON-CONSENSUS drafter on onnxruntime (`onnxruntime-node`: native code with the machine's widest vector
 * instructions): the model's matrices quantised to 8 bits in blocks of 32 (Q8_0, as `Q8Drafter`'s) and run by
 * onnxruntime's `MatMulNBits`, the rest of each block (RMSNorm, rotary, grouped-query attention, SiLU gate) as
 * plain ONNX operators, in one graph built here from our own weights (`onnx_proto.ts`: no converter, no
 * Python, no file). Like `Q8Drafter` it attends over the verifier's own float32 keys and values for every
 * confirmed position, so it needs no prompt pass of its own, and keeps approximate keys and values only for
 * the positions it drafts. Whatever it proposes, the deterministic kernels decide (`draft_verify.ts`), so its
 * arithmetic never reaches an output.
 *
 * One graph run drafts one position: inputs the token's embedding row, the position's rotary cos and sin and,
 * per block, the keys and values of every earlier position ([P, KV]); outputs the greedy id (`ArgMax` of the
 * int8 head) and the position's own key and value per block, kept in a `DraftCache` (`draft.ts`), which
 * copies each confirmed position of the verifier's cache once.
 *
 * Quantisation, per row and block of 32 weights w: d = fround(max|w| / 127), q = round(w / d) + 128
 * (1 … 255), so w ≈ (q − 128)·d, `MatMulNBits`'s default zero point. 4-bit weights were measured and not kept
 * (SmolLM2, December 2026): symmetric blocks accepted 25% of drafts, and float zero points ran onnxruntime's
 * slow path (0.6 s a token).
 *
 * It needs the native addon (Deno's `--allow-ffi`; `--allow-read` and `--allow-env` for the package), and
 * `OrtDrafter.create` rejects with the reason when it cannot load: callers fall back to `Q8Drafter`.
 *
 * @example
 * ```ts
 * import { OrtDrafter } from "./ort_draft.ts";
 * // const drafter = await OrtDrafter.create(model, { threads: 2 }); // builds the graph once (~3 s, SmolLM2)
 * // drafter.draft(cache, nextToken, 4)                              // up to 4 proposed ids
 * ```
 * @module
 */

import { headDim, type ModelConfig } from "./config.ts";
import { DraftCache, type Drafter } from "./draft.ts";
import type { KvCache } from "./generation.ts";
import { blockName, EMBED_TENSOR, type Model, NORM_TENSOR } from "./model.ts";
import { OnnxGraph, onnxModel } from "./onnx_proto.ts";
import { type RotaryTables, rotaryTables } from "./rotary.ts";

/** Options of `OrtDrafter.create`. */
export interface OrtDrafterOptions {
  /** onnxruntime's intra-op threads (default 1). */
  readonly threads?: number;
}

const BLOCK = 32;

/**
 * `MatMulNBits` inputs (8 bits, blocks of 32) for W [N, K] (rows of K, K a multiple of 32): codes
 * [N, K/32, 32] and scales [N, K/32]; see the module documentation. A value that is not finite counts as 0.
 */
export function quantise8(
  w: Float32Array,
  N: number,
  K: number,
): { codes: Uint8Array; scales: Float32Array } {
  if (K % BLOCK !== 0 || w.length !== N * K) {
    throw new RangeError(`Cannot quantise ${N}x${K} (${w.length} values): K must be a multiple of ${BLOCK}`);
  }
  const blocks = K / BLOCK, codes = new Uint8Array(N * K), scales = new Float32Array(N * blocks);
  for (let r = 0; r < N * blocks; r++) {
    const at = r * BLOCK;
    let amax = 0;
    for (let i = 0; i < BLOCK; i++) {
      const v = Math.abs(w[at + i]!);
      if (v < Infinity && v > amax) amax = v;
    }
    const d = Math.fround(amax / 127), inv = d > 0 ? 1 / d : 0;
    scales[r] = d;
    for (let i = 0; i < BLOCK; i++) {
      const v = w[at + i]!;
      codes[at + i] = (Number.isFinite(v) ? Math.max(-127, Math.min(127, Math.round(v * inv))) : 0) + 128;
    }
  }
  return { codes, scales };
}

// deno-lint-ignore no-explicit-any
type Native = any;

/** The ONNX graph of one drafted position; see `OrtDrafter`. Exported for tests. */
export function draftGraph(model: Model): Uint8Array<ArrayBuffer> {
  const c = model.config, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads;
  const KVH = c.num_key_value_heads, D = headDim(c), KV = KVH * D, half = D / 2, rep = H / KVH;
  const g = new OnnxGraph("draft");
  const ints = (name: string, v: readonly number[]) =>
    g.initializer(name, "int64", [v.length], BigInt64Array.from(v.map(BigInt)));
  const linear = (x: string, w: Float32Array, N: number, K: number, name: string) => {
    const { codes, scales } = quantise8(w, N, K);
    const cw = g.initializer(`${name}.codes`, "uint8", [N, K / BLOCK, BLOCK], codes);
    const sw = g.initializer(`${name}.scales`, "float", [N, K / BLOCK], scales);
    // accuracy level 4: the input is quantised to int8 per block too (its integer kernels; float inputs
    // with 8-bit weights run a path that measured 15x slower)
    const attrs = { K, N, bits: 8, block_size: BLOCK, accuracy_level: 4 };
    return g.node("MatMulNBits", [x, cw, sw], 1, attrs, "com.microsoft")[0]!;
  };
  const norm = (x: string, w: Float32Array, name: string) =>
    g.node("SimplifiedLayerNormalization", [x, g.initializer(name, "float", [C], w)], 1, {
      axis: -1,
      epsilon: { float: c.rms_norm_eps },
    })[0]!;
  const op = (type: string, inputs: string[], attrs = {}) => g.node(type, inputs, 1, attrs)[0]!;
  // rotate-half rotary on x [heads, 2, half] at the position whose cos and sin are [1, 1, half]
  const rotary = (x: string) => {
    const [a, b] = g.node("Split", [x, ints(g.fresh("halves"), [1, 1])], 2, { axis: 1 });
    const r1 = op("Sub", [op("Mul", [a!, "cos"]), op("Mul", [b!, "sin"])]);
    const r2 = op("Add", [op("Mul", [b!, "cos"]), op("Mul", [a!, "sin"])]);
    return op("Concat", [r1, r2], { axis: 1 });
  };
  g.input("x", "float", [1, C]);
  g.input("cos", "float", [1, 1, half]);
  g.input("sin", "float", [1, 1, half]);
  const shapeQ = ints("shape_q", [H, 2, half]), shapeK = ints("shape_k", [KVH, 2, half]);
  const shapeRow = ints("shape_row", [1, KV]), shapeGroups = ints("shape_groups", [-1, KVH, D]);
  const shapeQg = ints("shape_qg", [KVH, rep, D]), shapeOut = ints("shape_out", [1, C]);
  const splitQkv = ints("split_qkv", [C, KV, KV]), splitGu = ints("split_gu", [I, I]);
  const scale = g.initializer("scale", "float", [], Float32Array.of(1 / Math.sqrt(D)));
  let x = "x";
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = model.components[blockName(l)]!, w = (name: string) => p[name]!.data;
    const pk = g.input(`past_k${l}`, "float", ["P", KV]), pv = g.input(`past_v${l}`, "float", ["P", KV]);
    const h = norm(x, w("input_layernorm.weight"), `n1_${l}`);
    const qkvW = new Float32Array((C + 2 * KV) * C);
    qkvW.set(w("self_attn.q_proj.weight"));
    qkvW.set(w("self_attn.k_proj.weight"), C * C);
    qkvW.set(w("self_attn.v_proj.weight"), (C + KV) * C);
    const qkv = linear(h, qkvW, C + 2 * KV, C, `qkv${l}`);
    const [q, k, v] = g.node("Split", [qkv, splitQkv], 3, { axis: 1 });
    const qr = rotary(op("Reshape", [q!, shapeQ]));
    g.node("Reshape", [rotary(op("Reshape", [k!, shapeK])), shapeRow], [`new_k${l}`]);
    g.node("Identity", [v!], [`new_v${l}`]);
    const keys = op(
      "Transpose",
      [op("Reshape", [op("Concat", [pk, `new_k${l}`], { axis: 0 }), shapeGroups])],
      {
        perm: [1, 2, 0],
      },
    ); // [KVH, D, T]
    const values = op("Transpose", [op("Reshape", [op("Concat", [pv, v!], { axis: 0 }), shapeGroups])], {
      perm: [1, 0, 2],
    }); // [KVH, T, D]
    const scores = op("Mul", [op("MatMul", [op("Reshape", [qr, shapeQg]), keys]), scale]); // [KVH, rep, T]
    const attn = op("Reshape", [op("MatMul", [op("Softmax", [scores], { axis: -1 }), values]), shapeOut]);
    const x1 = op("Add", [x, linear(attn, w("self_attn.o_proj.weight"), C, C, `o${l}`)]);
    const h2 = norm(x1, w("post_attention_layernorm.weight"), `n2_${l}`);
    const guW = new Float32Array(2 * I * C);
    guW.set(w("mlp.gate_proj.weight"));
    guW.set(w("mlp.up_proj.weight"), I * C);
    const [gate, up] = g.node("Split", [linear(h2, guW, 2 * I, C, `gu${l}`), splitGu], 2, { axis: 1 });
    const act = op("Mul", [op("Mul", [gate!, op("Sigmoid", [gate!])]), up!]);
    x = op("Add", [x1, linear(act, w("mlp.down_proj.weight"), C, I, `down${l}`)]);
    g.output(`new_k${l}`, "float", [1, KV]);
    g.output(`new_v${l}`, "float", [1, KV]);
  }
  const hn = norm(x, model.components.norm![NORM_TENSOR]!.data, "norm");
  const logits = linear(hn, model.components.embed![EMBED_TENSOR]!.data, c.vocab_size, C, "head");
  g.node("ArgMax", [logits], ["id"], { axis: 1, keepdims: 0 });
  g.output("id", "int64", [1]);
  return onnxModel(g, { "": 17, "com.microsoft": 1 });
}

/** The onnxruntime drafter; see the module documentation. */
export class OrtDrafter implements Drafter {
  readonly #c: ModelConfig;
  readonly #embed: Float32Array;
  readonly #tables: RotaryTables;
  readonly #session: Native;
  readonly #Tensor: Native;
  readonly #kv: DraftCache;

  private constructor(model: Model, session: Native, Tensor: Native) {
    const c = model.config;
    this.#c = c;
    this.#embed = model.components.embed![EMBED_TENSOR]!.data;
    this.#tables = rotaryTables(c.max_position_embeddings, headDim(c), c.rope_theta);
    this.#session = session;
    this.#Tensor = Tensor;
    this.#kv = new DraftCache(c);
  }

  /** True when `model` can be drafted for (every matrix width a multiple of 32, even head width). */
  static supports(model: Model): boolean {
    const c = model.config;
    return c.hidden_size % BLOCK === 0 && c.intermediate_size % BLOCK === 0 && headDim(c) % 2 === 0;
  }

  /** Builds the graph of `model` and an onnxruntime session for it; rejects when onnxruntime cannot load. */
  static async create(model: Model, options: OrtDrafterOptions = {}): Promise<OrtDrafter> {
    const threads = options.threads ?? 1;
    if (!Number.isSafeInteger(threads) || threads < 1) {
      throw new RangeError(`Cannot draft on ${threads} threads`);
    }
    // the addon first: a runtime that cannot load it is told so whatever the model
    const { binding, initOrt } = await import("onnxruntime-node/dist/binding.js");
    const { Tensor } = await import("onnxruntime-node");
    if (!OrtDrafter.supports(model)) {
      throw new RangeError("Cannot draft for this model: widths not multiples of 32");
    }
    initOrt();
    const bytes = draftGraph(model);
    const session = new binding.InferenceSession();
    session.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: "all",
      executionMode: "sequential",
      // the threads must not spin between runs: the deterministic kernels' workers need the cores then
      extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
    });
    return new OrtDrafter(model, session, Tensor);
  }

  draft(cache: KvCache, next: number, k: number): number[] {
    return this.#kv.draft(cache, next, k, (token, pos) => this.#step(token, pos));
  }

  /** Runs `token` at position `pos` through the graph; returns its greedy successor. */
  #step(token: number, pos: number): number {
    const c = this.#c, C = c.hidden_size, KV = c.num_key_value_heads * headDim(c), half = this.#tables.half;
    const T = this.#Tensor;
    const feeds: Record<string, Native> = {
      x: new T("float32", this.#embed.slice(token * C, (token + 1) * C), [1, C]),
      cos: new T("float32", this.#tables.cos.slice(pos * half, (pos + 1) * half), [1, 1, half]),
      sin: new T("float32", this.#tables.sin.slice(pos * half, (pos + 1) * half), [1, 1, half]),
    };
    const fetches: Record<string, null> = { id: null };
    for (let b = 0; b < c.num_hidden_layers; b++) {
      feeds[`past_k${b}`] = new T("float32", this.#kv.k[b]!.subarray(0, pos * KV), [pos, KV]);
      feeds[`past_v${b}`] = new T("float32", this.#kv.v[b]!.subarray(0, pos * KV), [pos, KV]);
      fetches[`new_k${b}`] = null;
      fetches[`new_v${b}`] = null;
    }
    const out = this.#session.run(feeds, fetches, {});
    for (let b = 0; b < c.num_hidden_layers; b++) {
      this.#kv.k[b]!.set(out[`new_k${b}`].data as Float32Array, pos * KV);
      this.#kv.v[b]!.set(out[`new_v${b}`].data as Float32Array, pos * KV);
    }
    return Number((out.id.data as BigInt64Array)[0]);
  }
}
