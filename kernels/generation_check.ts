/**
 * The graph checks of a generation record (PROTOCOL §8.1), run by every validator on `respond` without any
 * neural work: the record answers exactly the job (model, prompt, limit, EOS id), every token is in the
 * vocabulary, the stop rule holds (no EOS before the last token; the last is EOS for `"eos"`, the count is the
 * limit for `"limit"`), partition 0 is fed `prompt ++ tokens[0..n-2]`, partition i is fed partition i−1's
 * output, the partitions cover the model in order with `embed` and `norm` on partition 0, the head reads the
 * last partition's output from position P−1 and its argmax is exactly the record's tokens. What these checks
 * cannot see (a forged activation, a forged argmax) is left to the referees of `generation_referee.ts`.
 *
 * @example
 * ```ts
 * import { checkGeneration } from "./generation_check.ts";
 * // const r = checkGeneration(record, traces, head, manifest, { model_root, prompt_ids, max_tokens, eos_id });
 * // r.ok || r.code === "invalid_record"
 * ```
 */
import { hasExactKeys, isObject, type JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { reject, type Rejection } from "../core/errors.ts";
import { configFromJson } from "./config.ts";
import { checkPartitionChain } from "./forward_graph.ts";
import {
  GENERATION_FORMAT,
  type GenerationRecord,
  type HeadTrace,
  type PartitionTrace,
  prefillIds,
} from "./generation_record.ts";
import type { Manifest } from "./manifest.ts";

/** What the record must answer. */
export interface GenerationExpect {
  readonly model_root: string;
  readonly prompt_ids: readonly number[];
  readonly max_tokens: number;
  readonly eos_id: number | null;
}

const RECORD_KEYS = [
  "format",
  "model_root",
  "prompt_ids",
  "tokens",
  "stop",
  "max_tokens",
  "eos_id",
  "input",
  "traces",
  "head",
];

function sameInts(a: unknown, b: readonly number[]): boolean {
  return Array.isArray(a) && a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Runs every graph check; `invalid_record` naming the first that fails. */
export function checkGeneration(
  record: unknown,
  traces: readonly unknown[],
  head: unknown,
  manifest: Manifest,
  expect: GenerationExpect,
): { ok: true; record: GenerationRecord; traces: PartitionTrace[]; head: HeadTrace } | Rejection {
  const fail = (why: string) => reject("invalid_record", `Cannot accept generation record: ${why}`);
  if (!isObject(record) || !hasExactKeys(record, RECORD_KEYS)) return fail("its fields are wrong");
  const r = record as unknown as GenerationRecord;
  if (r.format !== GENERATION_FORMAT) return fail(`format is ${JSON.stringify(r.format)}`);
  if (r.model_root !== expect.model_root) {
    return fail(`model_root is ${r.model_root}, the job's model is ${expect.model_root}`);
  }
  if (!sameInts(r.prompt_ids, expect.prompt_ids)) return fail("prompt_ids are not the job's");
  if (r.max_tokens !== expect.max_tokens) {
    return fail(`max_tokens is ${r.max_tokens}, expected ${expect.max_tokens}`);
  }
  if (r.eos_id !== expect.eos_id) return fail(`eos_id is ${r.eos_id}, expected ${expect.eos_id}`);
  const config = configFromJson(manifest.config as unknown as JsonValue);
  const V = config.vocab_size;
  const tokens = r.tokens;
  if (
    !Array.isArray(tokens) || tokens.length < 1 || tokens.length > expect.max_tokens ||
    !tokens.every((t) => Number.isSafeInteger(t) && t >= 0 && t < V)
  ) {
    return fail(`tokens are not 1-${expect.max_tokens} ids below ${V}`);
  }
  const n = tokens.length, eos = expect.eos_id, last = tokens[n - 1]!;
  if (eos !== null && tokens.slice(0, -1).includes(eos)) {
    return fail(`generation continues after EOS ${eos} (late stop)`);
  }
  if (r.stop === "eos") {
    if (eos === null || last !== eos) return fail(`stop is eos but the last token is ${last}`);
  } else if (r.stop === "limit") {
    if (eos !== null && last === eos) return fail("stop is limit but the last token is EOS");
    if (n !== expect.max_tokens) {
      return fail(`stop is limit after ${n} of ${expect.max_tokens} tokens (early stop)`);
    }
  } else {
    return fail(`stop is ${JSON.stringify(r.stop)}`);
  }
  const ids = prefillIds(expect.prompt_ids, tokens);
  if (ids.length > config.max_position_embeddings) {
    return fail(`${ids.length} positions, at most ${config.max_position_embeddings}`);
  }
  if (r.input !== id(ids)) return fail("input is not the id of prompt ++ tokens[0..n-2]");
  const chain = checkPartitionChain(r.traces, traces, r.input, manifest);
  if (!chain.ok) return fail(chain.why.replace("the record's input", "the prefill ids"));
  const typed = chain.traces, S = typed.length;
  if (!isObject(head) || !hasExactKeys(head, ["phase", "input", "first", "argmax"]) || id(head) !== r.head) {
    return fail("the head trace is malformed or does not match its id");
  }
  const h = head as unknown as HeadTrace;
  if (h.phase !== "head") return fail(`head phase is ${JSON.stringify(h.phase)}`);
  if (h.input !== typed[S - 1]!.output) return fail("head input is not the last partition's output");
  if (h.first !== expect.prompt_ids.length - 1) {
    return fail(`head starts at ${h.first}, expected ${expect.prompt_ids.length - 1}`);
  }
  if (!sameInts(h.argmax, tokens)) return fail("the head's argmax is not the record's tokens");
  return { ok: true, record: r, traces: typed, head: h };
}
