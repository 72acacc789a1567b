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
import { canonicalBytes } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { configFromJson, configToJson } from "./config.ts";
import { buildManifest, type Manifest, readComponent } from "./manifest.ts";
import { blockName, type Model } from "./model.ts";
import { type Tensors, writeSafetensors } from "./safetensors.ts";

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

function checkAdded(added: number): void {
  if (!Number.isSafeInteger(added) || added < 1 || added > MAX_GROWTH) {
    throw new ProtocolError(
      "invalid_model",
      `Cannot grow model: adding ${added} blocks, expected 1..${MAX_GROWTH}`,
    );
  }
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

/**
 * The grown manifest from the parent manifest and the bytes of its last block only (what a referee of a
 * growth needs): the config gains `added` layers, the new blocks' roots are added, `parent` is the parent's
 * root and `growth` records `{added, from_layers}`; origin and tokenizer are kept. Returns the manifest, its
 * root and the new objects (the identity block file and the manifest bytes).
 */
export function growManifest(
  parent: Manifest,
  parentRoot: string,
  lastBlock: Uint8Array,
  added: number,
): { manifest: Manifest; root: string; objects: Map<string, Uint8Array> } {
  checkAdded(added);
  const c = configFromJson(parent.config);
  const n = c.num_hidden_layers;
  const last = blockName(n - 1);
  if (sha256Hex(lastBlock) !== parent.components[last]) {
    throw new ProtocolError(
      "invalid_model",
      `Cannot grow model: the bytes given are not ${last} of the parent`,
    );
  }
  const file = writeSafetensors(identityBlock(readComponent(c, last, lastBlock)));
  const root = sha256Hex(file);
  const roots: Record<string, string> = { ...parent.components };
  for (let i = 0; i < added; i++) roots[blockName(n + i)] = root;
  const grown = { ...c, num_hidden_layers: n + added };
  configToJson(grown);
  const manifest = buildManifest(grown, roots, {
    parent: parentRoot,
    origin: parent.origin,
    tokenizer_root: parent.tokenizer_root,
    growth: { added, from_layers: n },
  });
  const bytes = canonicalBytes(manifest);
  const objects = new Map([[root, file], [sha256Hex(bytes), bytes]]);
  return { manifest, root: sha256Hex(bytes), objects };
}
