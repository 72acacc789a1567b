/**
 * The training batch format (PROTOCOL §11): `{codec, rows}` with 1–4 rows `{tokens, labels}` of equal length
 * at most 256, at most 512 tokens in all, token ids inside the codec's vocabulary, every label -100 or equal to
 * its token, and at least one scored target. A batch names its codec root; a batch of another codec is
 * `codec_mismatch`, any other break is `invalid_batch`.
 *
 * @example
 * ```ts
 * import { makeBatch, validateBatch } from "./batch.ts";
 * const batch = makeBatch(codec.root, doc.windows);
 * validateBatch(batch, codec.root, codec.manifest.vocabulary);
 * ```
 */
import { hasExactKeys, isObject } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { IGNORE, MAX_ROW_TOKENS } from "./windows.ts";

/** Rows per batch, at most. */
export const MAX_BATCH_ROWS = 4;
/** Tokens per batch (rows times length), at most. */
export const MAX_BATCH_TOKENS = 512;

/** One row of a batch. */
export interface BatchRow {
  readonly tokens: number[];
  readonly labels: number[];
}

/** A training batch bound to one codec. */
export interface Batch {
  readonly codec: string;
  readonly rows: BatchRow[];
}

function fail(message: string): never {
  throw new ProtocolError("invalid_batch", message);
}

/** Builds a batch from windows (checked with `validateBatch` against the windows' own bounds). */
export function makeBatch(
  codec: string,
  windows: readonly BatchRow[],
  vocabulary = Number.MAX_SAFE_INTEGER,
): Batch {
  const batch = { codec, rows: windows.map((w) => ({ tokens: [...w.tokens], labels: [...w.labels] })) };
  return validateBatch(batch, codec, vocabulary);
}

/** Checks a batch value against the format and the expected codec root; returns it typed. */
export function validateBatch(value: unknown, codec: string, vocabulary: number): Batch {
  if (!isObject(value) || !hasExactKeys(value, ["codec", "rows"]) || !Array.isArray(value.rows)) {
    fail("Cannot accept batch: expected exactly the fields codec and rows");
  }
  if (value.codec !== codec) {
    throw new ProtocolError(
      "codec_mismatch",
      `Cannot accept batch: its codec is ${String(value.codec)}, expected ${codec}`,
    );
  }
  const rows = value.rows;
  if (rows.length < 1 || rows.length > MAX_BATCH_ROWS) {
    fail(`Cannot accept batch: it has ${rows.length} rows, expected 1 to ${MAX_BATCH_ROWS}`);
  }
  let length = -1;
  let scored = 0;
  rows.forEach((row, r) => {
    if (!isObject(row) || !hasExactKeys(row, ["labels", "tokens"])) {
      fail(`Cannot accept row ${r}: wrong fields`);
    }
    const { tokens, labels } = row;
    if (!Array.isArray(tokens) || !Array.isArray(labels) || tokens.length !== labels.length) {
      fail(`Cannot accept row ${r}: tokens and labels must be lists of the same length`);
    }
    if (length === -1) length = tokens.length;
    if (tokens.length !== length) {
      fail(`Cannot accept row ${r}: length is ${tokens.length}, expected ${length}`);
    }
    if (length < 1 || length > MAX_ROW_TOKENS) {
      fail(`Cannot accept row ${r}: length is ${length}, expected 1 to ${MAX_ROW_TOKENS}`);
    }
    tokens.forEach((t, i) => {
      if (typeof t !== "number" || !Number.isSafeInteger(t) || t < 0 || t >= vocabulary) {
        fail(`Cannot accept row ${r}: token ${i} is ${String(t)}, outside the vocabulary of ${vocabulary}`);
      }
      const label = labels[i];
      if (label !== IGNORE && label !== t) {
        fail(`Cannot accept row ${r}: label ${i} is ${String(label)}, token is ${t}`);
      }
      if (label === t) {
        if (i === 0) fail(`Cannot accept row ${r}: position 0 is scored but has nothing before it`);
        scored++;
      }
    });
  });
  if (rows.length * length > MAX_BATCH_TOKENS) {
    fail(`Cannot accept batch: ${rows.length * length} tokens exceeds the bound of ${MAX_BATCH_TOKENS}`);
  }
  if (scored === 0) fail("Cannot accept batch: it has no scored target");
  return value as unknown as Batch;
}
