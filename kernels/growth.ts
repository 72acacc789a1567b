/**
 * Identity depth growth (PROTOCOL §5.3): append 1–16 blocks, each a copy of the last block with
 * `self_attn.o_proj.weight` and `mlp.down_proj.weight` set to +0, so both branches add +0 to the residual
 * stream and the grown model's logits are bit-identical to the parent's. (A residual value is never −0:
 * embeddings and updates never produce it, and x + (+0) = x for every other x.)
 *
 * @example
 * ```ts
 * import { growModel } from "./growth.ts";
 * import { initModel } from "./model.ts";
 * import { PRESETS } from "./config.ts";
 * const grown = growModel(initModel(PRESETS.devnet, 1), 2); // 6 blocks
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import type { Tensors } from "./safetensors.ts";
import { blockName, type Model } from "./model.ts";

/** The most blocks one growth may add. */
export const MAX_GROWTH = 16;

/** The tensors of an identity block grown from `last` (new arrays; the two output projections are +0). */
export function identityBlock(last: Tensors): Tensors {
  const out: Tensors = {};
  for (const [name, t] of Object.entries(last)) {
    const zero = name === "self_attn.o_proj.weight" || name === "mlp.down_proj.weight";
    out[name] = { shape: [...t.shape], data: zero ? new Float32Array(t.data.length) : t.data.slice() };
  }
  return out;
}

/** The model with `added` identity blocks appended; `invalid_model` unless 1 ≤ added ≤ 16. */
export function growModel(model: Model, added: number): Model {
  if (!Number.isSafeInteger(added) || added < 1 || added > MAX_GROWTH) {
    throw new ProtocolError(
      "invalid_model",
      `Cannot grow model: adding ${added} blocks, expected 1..${MAX_GROWTH}`,
    );
  }
  const c = model.config, n = c.num_hidden_layers;
  const last = model.components[blockName(n - 1)]!;
  const components = { ...model.components };
  for (let i = 0; i < added; i++) components[blockName(n + i)] = identityBlock(last);
  return { config: { ...c, num_hidden_layers: n + added }, components };
}
