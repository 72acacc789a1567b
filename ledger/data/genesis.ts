/**
 * The data-lifecycle section of a genesis (PROTOCOL §6): `data: {sources, cursors, training_blocks}` pins the
 * sources cohorts may draw from (specs of `text/sources/spec.ts`, 1-64, unique names), each source's first
 * cursor, and how many blocks an activated cohort has to finish its scheduled steps before it closes; the
 * optional `evaluation_documents` (2, 4, 8, 16 or 32; 32 when absent) is how many retention and how many fresh
 * documents every cohort carries, so how many paired documents each gate group tests. A chain
 * with this section trains only on activated cohorts: its `training` section lists no batches
 * (`batches: []`), and the profile's codec root is the genesis model's `tokenizer_root` (which the `codec`
 * field, when it names a root, must equal). The first data root is `id(data section)`.
 */
import { hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { parseSourceSpec, type SourceSpec } from "../../text/sources/spec.ts";
import type { TrainingSetup } from "../training/genesis.ts";

/** Most sources a genesis may pin. */
export const MAX_SOURCES = 64;
/** The allowed `data.evaluation_documents` (divisors of 32 from 2: the gate needs n ≥ 2, its mean is exact). */
export const EVALUATION_DOCUMENT_COUNTS: readonly number[] = [2, 4, 8, 16, 32];

/** The checked data-lifecycle setup of a genesis. */
export interface DataSetup {
  readonly sources: readonly SourceSpec[];
  readonly cursors: Readonly<Record<string, number>>;
  /** Blocks after activation by which a cohort's scheduled steps must be settled. */
  readonly training_blocks: number;
  /** Retention and fresh documents per cohort when the genesis sets them (absent: 32 each). */
  readonly evaluation_documents?: number;
  /** `id(data section)`: the data root before any cohort. */
  readonly data_root: string;
  /** The profile's codec root: every cohort document names it. */
  readonly tokenizer_root: string;
}

function bad(message: string): never {
  throw new ProtocolError("invalid_value", `Cannot use genesis: ${message}`);
}

/** Checks the `data` section against the training setup and `codec`; null when absent. */
export function parseDataGenesis(
  data: JsonValue,
  training: TrainingSetup | null,
  codec: JsonValue,
): DataSetup | null {
  if (data === null) return null;
  const keys = ["sources", "cursors", "training_blocks"];
  if (isObject(data) && Object.hasOwn(data, "evaluation_documents")) keys.push("evaluation_documents");
  if (!isObject(data) || !hasExactKeys(data, keys)) {
    bad("data is not {sources, cursors, training_blocks} with an optional evaluation_documents");
  }
  if (training === null) bad("a data section needs a training section (model, learning rate, clip)");
  if (training.batches.length !== 0) bad("a chain with a data section lists no training.batches");
  const list = data.sources;
  if (!Array.isArray(list) || list.length < 1 || list.length > MAX_SOURCES) {
    bad(`data.sources is not a list of 1-${MAX_SOURCES} source specs`);
  }
  const sources = list.map((s, i) => {
    try {
      return parseSourceSpec(s);
    } catch (e) {
      return bad(`data.sources[${i}]: ${(e as Error).message}`);
    }
  });
  const names = sources.map((s) => s.name);
  if (new Set(names).size !== names.length) bad("data.sources repeat a name");
  const cursors = data.cursors;
  if (!isObject(cursors) || !hasExactKeys(cursors, names)) {
    bad("data.cursors must hold exactly one cursor per source name");
  }
  for (const [name, c] of Object.entries(cursors)) {
    if (typeof c !== "number" || !Number.isSafeInteger(c) || c < 0) {
      bad(`data.cursors.${name} is ${JSON.stringify(c)}, expected an integer >= 0`);
    }
  }
  const blocks = data.training_blocks;
  if (typeof blocks !== "number" || !Number.isSafeInteger(blocks) || blocks < 1) {
    bad(`data.training_blocks is ${JSON.stringify(blocks)}, expected an integer >= 1`);
  }
  const docs = data.evaluation_documents;
  if (docs !== undefined && (typeof docs !== "number" || !EVALUATION_DOCUMENT_COUNTS.includes(docs))) {
    bad(
      `data.evaluation_documents is ${JSON.stringify(docs)}, expected one of ${
        EVALUATION_DOCUMENT_COUNTS.join(", ")
      }`,
    );
  }
  const tokenizer = training.manifest.tokenizer_root;
  if (isObject(codec) && Object.hasOwn(codec, "root") && codec.root !== tokenizer) {
    bad(`codec.root is ${JSON.stringify(codec.root)}, the model's tokenizer_root is ${tokenizer}`);
  }
  return {
    sources,
    cursors: cursors as Record<string, number>,
    training_blocks: blocks,
    ...(docs === undefined ? {} : { evaluation_documents: docs }),
    data_root: id(data),
    tokenizer_root: tokenizer,
  };
}
