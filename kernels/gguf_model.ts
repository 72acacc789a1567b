/**
 * A llama GGUF file as our model (PROTOCOL §10.2): the Hugging Face-named tensors of `gguf_llama.ts` grouped
 * into the components `embed` (`embed_tokens.weight` [V, C]), `norm` (`norm.weight` [C]) and `block_000` …
 * (the nine per-block tensors under their names without the `model.layers.N.` prefix).
 *
 * @example
 * ```ts
 * import { readGguf } from "./gguf.ts";
 * import { modelFromGguf } from "./gguf_model.ts";
 * const model = modelFromGguf(readGguf(await Deno.readFile("SmolLM2-135M-Instruct.Q4_1.gguf")));
 * model.components.block_029!["self_attn.k_proj.weight"]!.shape; // [192, 576]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { type ModelConfig, validateConfig } from "./config.ts";
import type { GgufFile } from "./gguf.ts";
import { type GgufLlamaConfig, llamaConfigFromGguf, llamaTensorsFromGguf } from "./gguf_llama.ts";
import { blockName, componentNames, componentSpec, EMBED_TENSOR, type Model, NORM_TENSOR } from "./model.ts";
import type { Tensors } from "./safetensors.ts";
import type { Tensor } from "./tensor.ts";

/** Groups Hugging Face-named Llama tensors into model components; every tensor must be present with its shape. */
export function groupComponents(
  config: ModelConfig,
  tensors: Record<string, Tensor>,
): Record<string, Tensors> {
  const take = (name: string, shape: readonly number[]): Tensor => {
    const t = tensors[name];
    if (t === undefined) {
      throw new ProtocolError("invalid_model", `Cannot group model: tensor ${name} is missing`);
    }
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot group model: tensor ${name} has shape [${t.shape}], expected [${shape}]`,
      );
    }
    return t;
  };
  const components: Record<string, Tensors> = {
    embed: {
      [EMBED_TENSOR]: take("model.embed_tokens.weight", componentSpec(config, "embed")[EMBED_TENSOR]!),
    },
    norm: { [NORM_TENSOR]: take("model.norm.weight", componentSpec(config, "norm")[NORM_TENSOR]!) },
  };
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const block: Tensors = {};
    for (const [name, shape] of Object.entries(componentSpec(config, blockName(i)))) {
      block[name] = take(`model.layers.${i}.${name}`, shape);
    }
    components[blockName(i)] = block;
  }
  const used = componentNames(config).reduce((n, c) => n + Object.keys(components[c]!).length, 0);
  if (used !== Object.keys(tensors).length) {
    const extra = Object.keys(tensors).find((n) =>
      n !== "model.embed_tokens.weight" && n !== "model.norm.weight" &&
      !/^model\.layers\.\d+\./.test(n)
    ) ?? "a block beyond the config";
    throw new ProtocolError("invalid_model", `Cannot group model: unexpected tensor ${extra}`);
  }
  return components;
}

/** Converts the GGUF config (plain numbers) into a validated model config. */
export function modelConfigFromGguf(config: GgufLlamaConfig): ModelConfig {
  return validateConfig({ ...config });
}

/** Reads a whole llama GGUF file into a model; `onTensor` reports progress while tensors are dequantised. */
export function modelFromGguf(
  file: GgufFile,
  onTensor?: (done: number, total: number, name: string) => void,
): Model {
  const gguf = llamaConfigFromGguf(file);
  const config = modelConfigFromGguf(gguf);
  return { config, components: groupComponents(config, llamaTensorsFromGguf(file, gguf, onTensor)) };
}
