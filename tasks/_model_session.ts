/**
 * What `generate` and `chat` share: loading a stored model and its codec with a progress line, and streaming a
 * greedy reply token by token through the kernels' KV-cache `decode` (the same steps as `generate` in
 * `kernels/generation.ts`, which returns only at the end).
 */
import { ObjectStore } from "../core/object_store.ts";
import { argmax } from "../kernels/cross_entropy.ts";
import { headDim } from "../kernels/config.ts";
import { decode, KvCache } from "../kernels/generation.ts";
import { loadManifest, readComponent } from "../kernels/manifest.ts";
import type { Model } from "../kernels/model.ts";
import { rotaryTables } from "../kernels/rotary.ts";
import type { Tensors } from "../kernels/safetensors.ts";
import { loadCodec, type TextCodec } from "../text/codec.ts";

/** A loaded model with its codec. */
export interface Session {
  readonly model: Model;
  readonly codec: TextCodec;
}

const encoder = new TextEncoder();

/** Writes text to stderr without a newline (progress lines). */
export function progress(text: string): void {
  Deno.stderr.writeSync(encoder.encode(text));
}

/** Loads the model `root` and the codec its manifest names from the object store `objects`. */
export async function loadSession(objects: string, root: string): Promise<Session> {
  const store = new ObjectStore(objects);
  const { manifest, config } = await loadManifest(store, root);
  const codec = await loadCodec(store, manifest.tokenizer_root);
  const components: Record<string, Tensors> = {};
  const names = Object.keys(manifest.components);
  const live = Deno.stderr.isTerminal();
  for (const [i, name] of names.entries()) {
    if (live) progress(`\rloading model ${root.slice(0, 12)}… ${i + 1}/${names.length} ${name}    `);
    components[name] = readComponent(config, name, await store.get(manifest.components[name]!));
  }
  progress(
    `${live ? "\r" : ""}loaded model ${root.slice(0, 12)}… (${manifest.parameters} parameters)       \n`,
  );
  return { model: { config, components }, codec };
}

/**
 * Greedy reply to `prompt` ids: up to `maxTokens` ids, stopping after the codec's EOS; `onText` receives
 * the decoded text as it becomes complete. Returns the ids (with the EOS when it was generated).
 */
export function streamReply(
  session: Session,
  prompt: readonly number[],
  maxTokens: number,
  onText: (text: string) => void,
): number[] {
  const { model, codec } = session;
  const c = model.config, V = c.vocab_size, eos = codec.manifest.special_ids.eos;
  const tables = rotaryTables(c.max_position_embeddings, headDim(c), c.rope_theta);
  const cache = new KvCache(c);
  const text = codec.streamDecoder();
  const ids: number[] = [];
  let logits = decode(model, cache, prompt, tables);
  while (ids.length < maxTokens) {
    const next = argmax(logits.subarray(logits.length - V), 1, V)[0]!;
    ids.push(next);
    if (next === eos) break;
    onText(text.push(next));
    if (ids.length === maxTokens || cache.length + 1 > c.max_position_embeddings) break;
    logits = decode(model, cache, [next], tables);
  }
  onText(text.end());
  return ids;
}
