/**
 * Bounds fixed by the `neuroshard-deno-v1` profile (PROTOCOL.md). Parameters that genesis may change live in
 * the genesis `params` object instead; these never change without a new profile.
 */

/** 1 MiB, the unit most byte bounds are written in. */
export const MIB = 1024 * 1024;

/** The largest integer canonical JSON may carry (2^53 - 1). */
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** How deeply canonical JSON values may nest (objects and arrays). */
export const MAX_JSON_DEPTH = 64;

/** A transaction's canonical bytes (PROTOCOL §2). */
export const MAX_TX_BYTES = 2 * MIB;

/** Claim and score metadata (PROTOCOL §5). */
export const MAX_METADATA_BYTES = 512 * 1024;

/** One upload chunk and the number of chunks of one object (PROTOCOL §5). */
export const UPLOAD_CHUNK_BYTES = MIB;
export const MAX_UPLOAD_CHUNKS = 256;

/** A sealed object (PROTOCOL §5) and, by default, any object in a local store. */
export const MAX_OBJECT_BYTES = 256 * MIB;

/** Workers of one reservation (PROTOCOL §5). */
export const MAX_WORKERS = 64;

/** A cohort document's canonical bytes (PROTOCOL §6). */
export const MAX_COHORT_BYTES = 1.5 * MIB;

/** HTTP bodies between actors, except object transfer (PROTOCOL §12). */
export const MAX_HTTP_BODY_BYTES = 256 * 1024;

/** Text bounds (PROTOCOL §11). */
export const MAX_TOKENIZER_BYTES = 16 * MIB;
export const MAX_TEMPLATE_BYTES = 64 * 1024;
export const MAX_RENDERED_BYTES = 512 * 1024;
export const MAX_RENDERED_TOKENS = 32_768;
export const MAX_TEMPLATE_CONCATENATIONS = 32;
export const MAX_CONVERSATION_MESSAGES = 128;
export const MAX_CONVERSATION_CONTENT_BYTES = 256 * 1024;
export const MIN_PROMPT_TOKENS = 2;
export const MAX_PROMPT_TOKENS = 192;

/** A pinned source file (PROTOCOL §11): it is read into memory whole and hashed before any row is read. */
export const MAX_SOURCE_BYTES = 256 * MIB;

/** Safetensors header bounds (kernels issue). */
export const MIN_SAFETENSORS_HEADER = 2;
export const MAX_SAFETENSORS_HEADER = 65_536;

/** Bearer tokens are at least this many random bytes (PROTOCOL §12). */
export const MIN_TOKEN_BYTES = 32;
