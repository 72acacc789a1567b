/**
 * The model as named components (PROTOCOL §10.2): `embed` (the token embedding, tied to the head), `norm`
 * (the final RMSNorm) and `block_000`, `block_001`, … each holding one block's nine tensors. Component
 * order — embed, norm, then blocks in numeric order — is the order of placement, of gradient norms and of
 * manifests.
 *
 * Initialisation is deterministic from a seed: every tensor draws from its own xoshiro128** stream seeded by
 * SHA-256 of `{component, seed, tensor}` (canonical JSON); a draw `u = (next >>> 8)·2^−24` gives
 * `w = fround((2u − 1)·a)` with `a = fround(0.02·√3)` (uniform, standard deviation 0.02). Norm weights are 1.
 *
 * @example
 * ```ts
 * import { initModel } from "./model.ts";
 * import { PRESETS } from "./config.ts";
 * const model = initModel(PRESETS.devnet, 7);
 * model.components.block_000!["self_attn.q_proj.weight"]!.shape; // [128, 128]
 * ```
 */
import { canonicalBytes } from "../core/canonical.ts";
import { sha256 } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { headDim, type ModelConfig, validateConfig } from "./config.ts";
import type { Tensors, TensorSpec } from "./safetensors.ts";
import { sizeOf } from "./tensor.ts";

/** A model held in memory: its config and every component's tensors. */
export interface Model {
  readonly config: ModelConfig;
  readonly components: Record<string, Tensors>;
}

/** The tensor name of the embedding, the only tensor of component `embed`. */
export const EMBED_TENSOR = "embed_tokens.weight";
/** The tensor name of the final norm, the only tensor of component `norm`. */
export const NORM_TENSOR = "norm.weight";

/** The component name of block i: `block_000` … */
export function blockName(i: number): string {
  return `block_${String(i).padStart(3, "0")}`;
}

/** The block index of a component name, or −1 for `embed` and `norm`. */
export function blockIndex(name: string): number {
  const m = /^block_(\d{3})$/.exec(name);
  return m ? Number(m[1]) : -1;
}

/** Every component name of a config in canonical order. */
export function componentNames(c: ModelConfig): string[] {
  const out = ["embed", "norm"];
  for (let i = 0; i < c.num_hidden_layers; i++) out.push(blockName(i));
  return out;
}

/** The tensors (and shapes) of one block (PROTOCOL §10.2). */
export function blockSpec(c: ModelConfig): TensorSpec {
  const C = c.hidden_size, M = c.intermediate_size, KV = c.num_key_value_heads * headDim(c);
  return {
    "input_layernorm.weight": [C],
    "mlp.down_proj.weight": [C, M],
    "mlp.gate_proj.weight": [M, C],
    "mlp.up_proj.weight": [M, C],
    "post_attention_layernorm.weight": [C],
    "self_attn.k_proj.weight": [KV, C],
    "self_attn.o_proj.weight": [C, C],
    "self_attn.q_proj.weight": [C, C],
    "self_attn.v_proj.weight": [KV, C],
  };
}

/** The tensors (and shapes) of a component; `invalid_model` for an unknown name. */
export function componentSpec(c: ModelConfig, name: string): TensorSpec {
  if (name === "embed") return { [EMBED_TENSOR]: [c.vocab_size, c.hidden_size] };
  if (name === "norm") return { [NORM_TENSOR]: [c.hidden_size] };
  const i = blockIndex(name);
  if (i < 0 || i >= c.num_hidden_layers) {
    throw new ProtocolError(
      "invalid_model",
      `Cannot use component ${JSON.stringify(name)}: not in this model`,
    );
  }
  return blockSpec(c);
}

/** How many parameters a component holds. */
export function componentParameters(c: ModelConfig, name: string): number {
  return Object.values(componentSpec(c, name)).reduce((n, shape) => n + sizeOf(shape), 0);
}

/** How many parameters the whole model holds. */
export function modelParameters(c: ModelConfig): number {
  return componentNames(c).reduce((n, name) => n + componentParameters(c, name), 0);
}

/** xoshiro128** over four 32-bit words: integer arithmetic only. */
function xoshiro(seedBytes: Uint8Array): () => number {
  const v = new DataView(seedBytes.buffer, seedBytes.byteOffset, 16);
  let a = v.getUint32(0), b = v.getUint32(4), c = v.getUint32(8), d = v.getUint32(12);
  if ((a | b | c | d) === 0) a = 1;
  return () => {
    const r = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return r;
  };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** Fills a tensor of `n` values from its own stream. */
function initTensor(
  seed: number,
  component: string,
  tensor: string,
  n: number,
  isNorm: boolean,
): Float32Array {
  const out = new Float32Array(n);
  if (isNorm) return out.fill(1);
  const next = xoshiro(sha256(canonicalBytes({ component, seed, tensor })));
  const a = Math.fround(0.02 * Math.sqrt(3));
  for (let i = 0; i < n; i++) {
    const u = (next() >>> 8) / 16777216;
    out[i] = Math.fround((2 * u - 1) * a);
  }
  return out;
}

/** A freshly initialised model (see the module comment); `seed` is a safe integer. */
export function initModel(config: ModelConfig, seed: number): Model {
  validateConfig(config);
  if (!Number.isSafeInteger(seed)) {
    throw new ProtocolError("invalid_model", `Cannot initialise model: seed is ${seed}`);
  }
  const components: Record<string, Tensors> = {};
  for (const name of componentNames(config)) {
    const tensors: Tensors = {};
    for (const [tensor, shape] of Object.entries(componentSpec(config, name))) {
      const isNorm = tensor.endsWith("layernorm.weight") || tensor === NORM_TENSOR;
      tensors[tensor] = { shape: [...shape], data: initTensor(seed, name, tensor, sizeOf(shape), isNorm) };
    }
    components[name] = tensors;
  }
  return { config, components };
}
