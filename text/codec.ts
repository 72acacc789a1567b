/**
 * TextCodec: a loaded tokenizer backend and bounded chat template under one root (PROTOCOL §11). Loading
 * re-hashes the manifest and the canonical backend, checks the runtime versions, and refuses a root other than
 * the one asked for (`codec_mismatch`). The tokenizer is always built with `clean_up_tokenization_spaces:
 * false` and encodes with `add_special_tokens: false`; `decode([])` is ""; streaming decode buffers incomplete
 * UTF-8 itself, so a token holding part of an emoji never shows as U+FFFD.
 *
 * @example
 * ```ts
 * import { ObjectStore } from "../core/object_store.ts";
 * import { loadCodec } from "./codec.ts";
 * const codec = await loadCodec(new ObjectStore("home/objects"), root);
 * codec.decode(codec.encode("Hello")); // "Hello"
 * ```
 */
import { Tokenizer } from "@huggingface/tokenizers";
import { canonicalBytes, decodeCanonical, type JsonObject, type JsonValue } from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import type { ObjectStore } from "../core/object_store.ts";
import { fromByteLevel } from "./byte_level.ts";
import { type CheckedTemplate, checkTemplate } from "./chat_template.ts";
import {
  type BuiltCodec,
  canonicalBackend,
  type CodecManifest,
  tokenIds,
  validateManifest,
} from "./codec_manifest.ts";
import { type ChatMessage, renderChunks, renderTemplate } from "./template_render.ts";

const encoder = new TextEncoder();

/** A loaded, verified text codec. */
export class TextCodec {
  /** The codec root (id of the manifest). */
  readonly root: string;
  /** The verified manifest. */
  readonly manifest: CodecManifest;
  /** The checked chat template. */
  readonly template: CheckedTemplate;
  private readonly tokenizer: Tokenizer;
  /** The UTF-8 bytes each id decodes to. */
  private readonly pieces: Uint8Array[];
  private readonly specials: string[];

  private constructor(root: string, manifest: CodecManifest, backend: JsonObject) {
    this.root = root;
    this.manifest = manifest;
    this.template = checkTemplate(manifest.chat_template);
    const model = backend.model as JsonObject;
    const decoder = backend.decoder as JsonObject | null;
    if (model.type !== "BPE" || decoder === null || decoder.type !== "ByteLevel") {
      throw new ProtocolError(
        "invalid_tokenizer",
        "Cannot load codec: the backend is not a byte-level BPE tokenizer",
      );
    }
    try {
      this.tokenizer = new Tokenizer(backend, { clean_up_tokenization_spaces: false });
    } catch (e) {
      throw new ProtocolError(
        "invalid_tokenizer",
        `Cannot load codec: the tokenizer library refuses the backend: ${e}`,
      );
    }
    const ids = tokenIds(backend);
    const size = Math.max(...ids.values()) + 1;
    if (size !== manifest.vocabulary) {
      throw new ProtocolError(
        "invalid_tokenizer",
        `Cannot load codec: the backend has ${size} ids, the manifest says ${manifest.vocabulary}`,
      );
    }
    const addedTokens = (backend.added_tokens ?? []) as JsonObject[];
    const added = new Set(addedTokens.map((t) => t.content as string));
    this.specials = addedTokens.filter((t) => t.special === true).map((t) => t.content as string);
    this.pieces = new Array(manifest.vocabulary);
    for (const [token, tokenId] of ids) {
      if (tokenId < 0 || tokenId >= manifest.vocabulary) {
        throw new ProtocolError(
          "invalid_tokenizer",
          `Cannot load codec: token id ${tokenId} is out of range`,
        );
      }
      this.pieces[tokenId] = added.has(token) ? encoder.encode(token) : fromByteLevel(token);
    }
    for (const role of ["bos", "eos", "pad", "unk"] as const) {
      if (ids.get(manifest.special_tokens[role]) !== manifest.special_ids[role]) {
        throw new ProtocolError(
          "invalid_tokenizer",
          `Cannot load codec: ${role} token has id ${ids.get(manifest.special_tokens[role])}, ` +
            `manifest says ${manifest.special_ids[role]}`,
        );
      }
    }
  }

  /** Builds a codec from its parts, verifying that they give `expectedRoot` when one is given. */
  static fromParts(manifestValue: JsonValue, backendBytes: Uint8Array, expectedRoot?: string): TextCodec {
    const manifest = validateManifest(manifestValue);
    const root = id(manifestValue);
    if (expectedRoot !== undefined && root !== expectedRoot) {
      throw new ProtocolError(
        "codec_mismatch",
        `Cannot load codec ${expectedRoot}: the manifest has root ${root}`,
      );
    }
    const backend = decodeCanonical(backendBytes) as JsonObject;
    const recanonical = canonicalBackend(backend);
    const backendId = sha256Hex(recanonical);
    if (backendId !== manifest.backend || sha256Hex(backendBytes) !== manifest.backend) {
      throw new ProtocolError(
        "codec_mismatch",
        `Cannot load codec ${root}: backend hashes to ${backendId}, manifest says ${manifest.backend}`,
      );
    }
    return new TextCodec(root, manifest, backend);
  }

  /** The special added tokens of the backend (strings conversation content may never contain). */
  specialStrings(): string[] {
    return [...this.specials];
  }

  /** The token ids of `text` (no special tokens added; special-token strings in text map to their ids). */
  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** The text of `ids` ("" for none); ids outside the vocabulary are rejected. */
  decode(ids: readonly number[]): string {
    if (ids.length === 0) return "";
    this.checkIds(ids);
    return this.tokenizer.decode([...ids], { clean_up_tokenization_spaces: false });
  }

  /** A streaming decoder: `push(id)` returns the text that is complete so far, `end()` flushes the rest. */
  streamDecoder(): { push(tokenId: number): string; end(): string } {
    const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
    return {
      push: (tokenId: number) => {
        this.checkIds([tokenId]);
        return decoder.decode(this.pieces[tokenId]!, { stream: true });
      },
      end: () => decoder.decode(),
    };
  }

  /** Renders a conversation with the codec's template (bounded, see `template_render.ts`). */
  render(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
    return renderTemplate(this.template, this.context(messages, addGenerationPrompt));
  }

  /** Renders a conversation as a stream of chunks. */
  renderStream(
    messages: readonly ChatMessage[],
    addGenerationPrompt: boolean,
  ): Generator<string, void, undefined> {
    return renderChunks(this.template, this.context(messages, addGenerationPrompt));
  }

  /** Throws `codec_mismatch` when `other` is not this codec's root. */
  requireSame(other: string, what: string): void {
    if (other !== this.root) {
      throw new ProtocolError(
        "codec_mismatch",
        `Cannot use ${what}: its codec is ${other}, expected ${this.root}`,
      );
    }
  }

  private context(messages: readonly ChatMessage[], addGenerationPrompt: boolean) {
    const t = this.manifest.special_tokens;
    return {
      messages,
      add_generation_prompt: addGenerationPrompt,
      bos_token: t.bos,
      eos_token: t.eos,
      pad_token: t.pad,
      unk_token: t.unk,
    };
  }

  private checkIds(ids: readonly number[]): void {
    for (const tokenId of ids) {
      if (!Number.isSafeInteger(tokenId) || this.pieces[tokenId] === undefined) {
        throw new ProtocolError(
          "invalid_tokenizer",
          `Cannot decode token id ${tokenId}: the vocabulary has ${this.manifest.vocabulary} ids`,
        );
      }
    }
  }
}

/** Writes a built codec (backend and manifest) into an object store and returns its root. */
export async function storeCodec(store: ObjectStore, built: BuiltCodec): Promise<string> {
  await store.put(built.backend);
  const root = await store.put(canonicalBytes(built.manifest));
  if (root !== built.root) throw new ProtocolError("codec_mismatch", `Cannot store codec: root ${root}`);
  return root;
}

/** Loads and verifies the codec `root` from an object store. */
export async function loadCodec(store: ObjectStore, root: string): Promise<TextCodec> {
  const manifest = decodeCanonical(await store.get(root));
  const backend = await store.get(validateManifest(manifest).backend);
  return TextCodec.fromParts(manifest, backend, root);
}
