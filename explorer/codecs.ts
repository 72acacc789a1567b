/**
 * Text codecs for decoding prompts and answers on the inference page, loaded read-only from an object store
 * (a validator home's `objects/`, or `--objects DIR`) by the tokenizer root of the job's model. At most
 * `MAX_CODECS` are kept; a codec that cannot be loaded is remembered as missing, so the page says so once.
 */
import { ObjectStore } from "../core/object_store.ts";
import { isObject } from "../core/canonical.ts";
import { loadCodec } from "../text/codec.ts";
import type { TextCodec } from "../text/codec.ts";
import type { ChainSource } from "./source.ts";

/** The most codecs kept at once. */
export const MAX_CODECS = 4;

/** Codecs by model root, loaded on first use. */
export class Codecs {
  readonly #store: ObjectStore | null;
  readonly #source: ChainSource;
  readonly #byModel = new Map<string, TextCodec | null>();

  constructor(source: ChainSource, objectsDir: string | null) {
    this.#source = source;
    this.#store = objectsDir === null ? null : new ObjectStore(objectsDir);
  }

  /** Whether an object store was given. */
  get enabled(): boolean {
    return this.#store !== null;
  }

  /** The codec of `modelRoot`'s manifest, or null without an object store or when it is not there. */
  async forModel(modelRoot: string): Promise<TextCodec | null> {
    if (this.#store === null) return null;
    if (this.#byModel.has(modelRoot)) return this.#byModel.get(modelRoot)!;
    let codec: TextCodec | null = null;
    try {
      const manifest = await this.#source.query(`/manifest?root=${modelRoot}`);
      if (isObject(manifest) && typeof manifest.tokenizer_root === "string") {
        codec = await loadCodec(this.#store, manifest.tokenizer_root);
      }
    } catch {
      codec = null; // not in this store: the page shows token ids only
    }
    this.#byModel.set(modelRoot, codec);
    if (this.#byModel.size > MAX_CODECS) this.#byModel.delete(this.#byModel.keys().next().value!);
    return codec;
  }
}
