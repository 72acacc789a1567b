/**
 * One Llama decoder block, forward and backward (PROTOCOL §10.1):
 * `h = x + o(attn(rope(q(n1)), rope(k(n1)), v(n1)))` with `n1 = rmsnorm(x)`, then
 * `y = h + mlp(rmsnorm(h))`. Gradients merge in a fixed order: `dh = dy + (norm-2 branch)`,
 * `dn1 = (dn1_q + dn1_k) + dn1_v`, `dx = dh + (norm-1 branch)`.
 *
 * @example
 * ```ts
 * import { blockForward } from "./block.ts";
 * import { initModel } from "./model.ts";
 * import { rotaryTables } from "./rotary.ts";
 * import { PRESETS } from "./config.ts";
 * const m = initModel(PRESETS.devnet, 1);
 * const x = new Float32Array(2 * 128); // x: [B·T = 1·2, C]
 * const { y } = blockForward(x.fill(0.5), m.components.block_000!, m.config, 1, 2, rotaryTables(2, 32, 1e5));
 * ```
 */
import { attentionBackward, type AttentionCache, attentionForward } from "./attention.ts";
import { headDim, type ModelConfig } from "./config.ts";
import { linearBackward, linearForward, linearForwardGroup } from "./linear.ts";
import { mlpBackward, type MlpCache, mlpForward } from "./mlp.ts";
import { addForward } from "./residual.ts";
import { rmsnormBackward, type RmsnormCache, rmsnormForward } from "./rmsnorm.ts";
import { rotaryBackward, rotaryForward, type RotaryTables } from "./rotary.ts";
import type { Tensors } from "./safetensors.ts";
import { makeResident } from "./wasm/matmul_wasm.ts";

/** Everything the backward of a block needs from its forward. */
export interface BlockCache {
  readonly x: Float32Array; // x: [N,C]
  readonly n1: Float32Array; // n1: [N,C]
  readonly norm1: RmsnormCache;
  readonly q: Float32Array; // q: [N,C], rotated
  readonly k: Float32Array; // k: [N,KV], rotated
  readonly v: Float32Array; // v: [N,KV]
  readonly attn: AttentionCache;
  readonly a: Float32Array; // a: [N,C], attention output before o_proj
  readonly h: Float32Array; // h: [N,C]
  readonly n2: Float32Array; // n2: [N,C]
  readonly norm2: RmsnormCache;
  readonly mlp: MlpCache;
}

function w(tensors: Tensors, name: string): Float32Array {
  return tensors[name]!.data;
}

/** x [B·T, C] → y [B·T, C] through one block with weights `p` (names of PROTOCOL §10.2). */
export function blockForward(
  x: Float32Array,
  p: Tensors,
  c: ModelConfig,
  B: number,
  T: number,
  tables: RotaryTables,
): { y: Float32Array; cache: BlockCache } {
  const N = B * T, C = c.hidden_size, H = c.num_attention_heads, KVH = c.num_key_value_heads, D = headDim(c);
  const KV = KVH * D, M = c.intermediate_size;
  const { y: n1, cache: norm1 } = rmsnormForward(x, w(p, "input_layernorm.weight"), N, C, c.rms_norm_eps);
  const [qn, kn, v] = linearForwardGroup(n1, qkvWeightsOf(p), N, C, [C, KV, KV]); // qn: [N,C]; kn, v: [N,KV]
  const q = rotaryForward(qn, tables, B, T, H, D);
  const k = rotaryForward(kn, tables, B, T, KVH, D);
  const { out: a, cache: attn } = attentionForward(q, k, v, { B, Tq: T, Tk: T, H, KVH, D });
  const h = addForward(x, linearForward(a, w(p, "self_attn.o_proj.weight"), N, C, C)); // h: [N,C]
  const { y: n2, cache: norm2 } = rmsnormForward(
    h,
    w(p, "post_attention_layernorm.weight"),
    N,
    C,
    c.rms_norm_eps,
  );
  const mlpWeights = mlpWeightsOf(p);
  const { y: m, cache: mlp } = mlpForward(n2, mlpWeights, N, C, M);
  const y = addForward(h, m); // y: [N,C]
  return { y, cache: { x, n1, norm1, q, k, v, attn, a, h, n2, norm2, mlp } };
}

/**
 * The weights of a block that multiply one input, as grouped by `blockForward` (`linearForwardGroup`): for a
 * resident model (`makeModelResident`), each group's panels are packed as one B.
 */
export const SHARED_INPUTS = [
  ["self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"],
  ["mlp.gate_proj.weight", "mlp.up_proj.weight"],
] as const;

/**
 * Moves a model's weights into the kernels' memory for good and prepacks them (`makeResident`), each block's
 * `SHARED_INPUTS` packed together so q/k/v and gate/up are one matmul call each: for a model that is only run
 * (`deno task generate`, `chat`). Returns the bytes moved and packed.
 */
export function makeModelResident(components: Record<string, Tensors>): number {
  return makeResident(components, { together: SHARED_INPUTS });
}

/** The attention's q, k and v projection weights of a block, in that order (they share their input). */
export function qkvWeightsOf(p: Tensors): [Float32Array, Float32Array, Float32Array] {
  const [q, k, v] = SHARED_INPUTS[0];
  return [w(p, q), w(p, k), w(p, v)];
}

/** The MLP weights of a block. */
export function mlpWeightsOf(p: Tensors) {
  return {
    gate: w(p, "mlp.gate_proj.weight"),
    up: w(p, "mlp.up_proj.weight"),
    down: w(p, "mlp.down_proj.weight"),
  };
}

/**
 * dy [B·T, C] → dx [B·T, C] and the gradient of every tensor of the block (same names and shapes). `into`,
 * when given, holds where each projection's weight gradient is written (views into the file the gradients
 * will be kept in: `GradientFiles.alloc`); those gradients are then those views, with the same values.
 */
export function blockBackward(
  dy: Float32Array,
  cache: BlockCache,
  p: Tensors,
  c: ModelConfig,
  B: number,
  T: number,
  tables: RotaryTables,
  into?: Tensors,
): { dx: Float32Array; grads: Tensors } {
  const N = B * T, C = c.hidden_size, H = c.num_attention_heads, KVH = c.num_key_value_heads, D = headDim(c);
  const KV = KVH * D, M = c.intermediate_size;
  const to = (name: string) => into?.[name]?.data;
  const mlpInto = {
    gate: to("mlp.gate_proj.weight"),
    up: to("mlp.up_proj.weight"),
    down: to("mlp.down_proj.weight"),
  };
  const mlp = mlpBackward(dy, cache.n2, mlpWeightsOf(p), cache.mlp, N, C, M, mlpInto);
  const norm2 = rmsnormBackward(mlp.dx, w(p, "post_attention_layernorm.weight"), cache.norm2, N, C);
  const dh = addForward(dy, norm2.dx); // dh: [N,C]
  const o = linearBackward(
    dh,
    cache.a,
    w(p, "self_attn.o_proj.weight"),
    N,
    C,
    C,
    to("self_attn.o_proj.weight"),
  );
  const attn = attentionBackward(o.dx, cache.q, cache.k, cache.v, cache.attn, { B, Tq: T, Tk: T, H, KVH, D });
  const dq = rotaryBackward(attn.dq, tables, B, T, H, D); // dq: [N,C], before rotation
  const dk = rotaryBackward(attn.dk, tables, B, T, KVH, D); // dk: [N,KV], before rotation
  const q = linearBackward(
    dq,
    cache.n1,
    w(p, "self_attn.q_proj.weight"),
    N,
    C,
    C,
    to("self_attn.q_proj.weight"),
  );
  const k = linearBackward(
    dk,
    cache.n1,
    w(p, "self_attn.k_proj.weight"),
    N,
    C,
    KV,
    to("self_attn.k_proj.weight"),
  );
  const v = linearBackward(
    attn.dv,
    cache.n1,
    w(p, "self_attn.v_proj.weight"),
    N,
    C,
    KV,
    to("self_attn.v_proj.weight"),
  );
  const dn1 = addForward(addForward(q.dx, k.dx), v.dx); // dn1: [N,C]
  const norm1 = rmsnormBackward(dn1, w(p, "input_layernorm.weight"), cache.norm1, N, C);
  const dx = addForward(dh, norm1.dx); // dx: [N,C]
  const g = (name: string, data: Float32Array) => ({ shape: [...p[name]!.shape], data });
  return {
    dx,
    grads: {
      "input_layernorm.weight": g("input_layernorm.weight", norm1.dw),
      "mlp.down_proj.weight": g("mlp.down_proj.weight", mlp.dDown),
      "mlp.gate_proj.weight": g("mlp.gate_proj.weight", mlp.dGate),
      "mlp.up_proj.weight": g("mlp.up_proj.weight", mlp.dUp),
      "post_attention_layernorm.weight": g("post_attention_layernorm.weight", norm2.dw),
      "self_attn.k_proj.weight": g("self_attn.k_proj.weight", k.dw),
      "self_attn.o_proj.weight": g("self_attn.o_proj.weight", o.dw),
      "self_attn.q_proj.weight": g("self_attn.q_proj.weight", q.dw),
      "self_attn.v_proj.weight": g("self_attn.v_proj.weight", v.dw),
    },
  };
}
