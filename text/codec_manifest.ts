/**
 * The TextCodec manifest (PROTOCOL §11): what binds a tokenizer backend, a chat template and the special tokens
 * into one content-addressed root. This file builds and validates manifests; `codec.ts` loads them.
 *
 * @example
 * ```ts
 * import { buildCodec } from "./codec_manifest.ts";
 * const built = buildCodec(tokenizerJsonObject, SMOLLM2_TEMPLATE, DEVNET_SPECIAL_TOKENS);
 * built.root; // the codec root a model manifest carries as tokenizer_root
 * ```
 */
import {
  canonicalBytes,
  hasExactKeys,
  isObject,
  type JsonObject,
  type JsonValue,
} from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { isRoot } from "../core/hex.ts";
import { MAX_TOKENIZER_BYTES } from "../core/limits.ts";
import { checkTemplate } from "./chat_template.ts";

/** The manifest format string. */
export const CODEC_FORMAT = "neuroshard-text-codec-v1";
/** The renderer every codec uses. */
export const CODEC_RENDERER = "bounded-jinja-trim-lstrip-v1";
/** The library versions this build runs; a manifest naming others is refused (kept equal to deno.json). */
export const CODEC_RUNTIME = {
  templates: "nunjucks@3.2.4",
  tokenizers: "@huggingface/tokenizers@0.2.0",
} as const;

/** The four special-token roles. */
export interface SpecialTokens {
  readonly bos: string;
  readonly eos: string;
  readonly pad: string;
  readonly unk: string;
}

/** The special tokens of tokenizers this trainer writes (SmolLM2's choice of roles). */
export const DEVNET_SPECIAL_TOKENS: SpecialTokens = {
  bos: "<|im_start|>",
  eos: "<|im_end|>",
  pad: "<|im_end|>",
  unk: "<|endoftext|>",
};

/** A codec manifest. */
export interface CodecManifest {
  readonly format: typeof CODEC_FORMAT;
  readonly backend: string;
  readonly chat_template: string;
  readonly vocabulary: number;
  readonly special_tokens: SpecialTokens;
  readonly special_ids: {
    readonly bos: number;
    readonly eos: number;
    readonly pad: number;
    readonly unk: number;
  };
  readonly runtime: typeof CODEC_RUNTIME;
  readonly renderer: typeof CODEC_RENDERER;
  readonly decode_cleanup: false;
  readonly input_normalization: "none";
}

/** A codec ready to store: the manifest, its root and the canonical backend bytes. */
export interface BuiltCodec {
  readonly manifest: CodecManifest;
  readonly root: string;
  readonly backend: Uint8Array;
}

const ROLES = ["bos", "eos", "pad", "unk"] as const;

/** The canonical backend: the tokenizer.json object with padding and truncation null, as canonical bytes. */
export function canonicalBackend(tokenizer: JsonValue): Uint8Array {
  if (!isObject(tokenizer) || !isObject(tokenizer.model)) {
    throw new ProtocolError("invalid_tokenizer", "Cannot read tokenizer: tokenizer.json has no model object");
  }
  const bytes = canonicalBytes({ ...tokenizer, padding: null, truncation: null });
  if (bytes.length > MAX_TOKENIZER_BYTES) {
    throw new ProtocolError(
      "too_large",
      `Cannot accept tokenizer: ${bytes.length} bytes exceeds the bound of ${MAX_TOKENIZER_BYTES}`,
    );
  }
  return bytes;
}

/** The id of every token in a tokenizer.json (model vocabulary and added tokens). */
export function tokenIds(tokenizer: JsonObject): Map<string, number> {
  const model = tokenizer.model as JsonObject;
  const ids = new Map<string, number>();
  if (!isObject(model.vocab)) throw new ProtocolError("invalid_tokenizer", "Cannot read tokenizer: no vocab");
  for (const [token, value] of Object.entries(model.vocab)) {
    if (typeof value !== "number") throw new ProtocolError("invalid_tokenizer", `Cannot read token ${token}`);
    ids.set(token, value);
  }
  for (const added of (tokenizer.added_tokens ?? []) as JsonValue[]) {
    if (!isObject(added) || typeof added.content !== "string" || typeof added.id !== "number") {
      throw new ProtocolError("invalid_tokenizer", "Cannot read tokenizer: malformed added token");
    }
    ids.set(added.content, added.id);
  }
  return ids;
}

/** Builds a codec from a tokenizer.json object, a chat template and the special-token roles. */
export function buildCodec(tokenizer: JsonValue, chatTemplate: string, special: SpecialTokens): BuiltCodec {
  const backend = canonicalBackend(tokenizer);
  checkTemplate(chatTemplate);
  const ids = tokenIds(tokenizer as JsonObject);
  const specialIds = { bos: 0, eos: 0, pad: 0, unk: 0 };
  const addedSpecial = new Set(
    ((tokenizer as JsonObject).added_tokens as JsonObject[] ?? []).filter((t) => t.special === true).map((
      t,
    ) => t.content),
  );
  for (const role of ROLES) {
    const token = special[role];
    const tokenId = ids.get(token);
    if (tokenId === undefined || !addedSpecial.has(token)) {
      throw new ProtocolError(
        "invalid_tokenizer",
        `Cannot build codec: ${role} token "${token}" is not a special token of the tokenizer`,
      );
    }
    specialIds[role] = tokenId;
  }
  const vocabulary = Math.max(...ids.values()) + 1;
  const manifest: CodecManifest = {
    format: CODEC_FORMAT,
    backend: sha256Hex(backend),
    chat_template: chatTemplate,
    vocabulary,
    special_tokens: { bos: special.bos, eos: special.eos, pad: special.pad, unk: special.unk },
    special_ids: specialIds,
    runtime: CODEC_RUNTIME,
    renderer: CODEC_RENDERER,
    decode_cleanup: false,
    input_normalization: "none",
  };
  return { manifest, root: id(manifest as unknown as JsonValue), backend };
}

/** Checks the shape and fixed fields of a decoded manifest; `invalid_tokenizer` or `codec_mismatch` if wrong. */
export function validateManifest(value: JsonValue): CodecManifest {
  const keys = [
    "format",
    "backend",
    "chat_template",
    "vocabulary",
    "special_tokens",
    "special_ids",
    "runtime",
    "renderer",
    "decode_cleanup",
    "input_normalization",
  ];
  if (!isObject(value) || !hasExactKeys(value, keys)) {
    throw new ProtocolError("invalid_tokenizer", "Cannot read codec manifest: wrong fields");
  }
  if (value.format !== CODEC_FORMAT || value.renderer !== CODEC_RENDERER) {
    throw new ProtocolError(
      "invalid_tokenizer",
      `Cannot read codec manifest: format ${String(value.format)}, renderer ${String(value.renderer)}`,
    );
  }
  if (value.decode_cleanup !== false || value.input_normalization !== "none") {
    throw new ProtocolError(
      "invalid_tokenizer",
      "Cannot read codec manifest: decode cleanup or normalization is on",
    );
  }
  if (!isRoot(value.backend) || typeof value.chat_template !== "string") {
    throw new ProtocolError(
      "invalid_tokenizer",
      "Cannot read codec manifest: backend or chat_template malformed",
    );
  }
  const runtime = value.runtime;
  if (
    !isObject(runtime) || !hasExactKeys(runtime, ["templates", "tokenizers"]) ||
    runtime.templates !== CODEC_RUNTIME.templates || runtime.tokenizers !== CODEC_RUNTIME.tokenizers
  ) {
    throw new ProtocolError(
      "codec_mismatch",
      `Cannot load codec: runtime is ${JSON.stringify(runtime)}, this build runs ${
        JSON.stringify(CODEC_RUNTIME)
      }`,
    );
  }
  const tokens = value.special_tokens;
  const ids = value.special_ids;
  if (
    !isObject(tokens) || !hasExactKeys(tokens, [...ROLES]) || !isObject(ids) ||
    !hasExactKeys(ids, [...ROLES]) ||
    !ROLES.every((r) => typeof tokens[r] === "string" && Number.isSafeInteger(ids[r])) ||
    !Number.isSafeInteger(value.vocabulary)
  ) {
    throw new ProtocolError("invalid_tokenizer", "Cannot read codec manifest: special tokens malformed");
  }
  return value as unknown as CodecManifest;
}
