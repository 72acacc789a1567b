/**
 * The graph checks of a score record (PROTOCOL §7 and §10.4), run by every validator on `score` without any
 * neural work: the record is for the expected model and exactly the assigned windows (their batch roots in
 * order, partition 0 fed their stacked batch), the partitions chain and cover the model in order with `embed`
 * and `norm` on partition 0, the head reads the last partition's output, and commits one canonical hex
 * float64 loss (finite, ≥ 0), the window's real target count and one argmax per position (ids below the
 * vocabulary) per window. What these checks cannot see (a forged activation, loss or argmax) is left to the
 * referees of `score_referee.ts`.
 *
 * @example
 * ```ts
 * import { checkScore } from "./score_check.ts";
 * // const r = checkScore(record, traces, head, manifest, { model_root, windows });
 * // r.ok || r.code === "invalid_record"
 * ```
 */
import { hasExactKeys, isObject, type JsonValue } from "../core/canonical.ts";
import { id } from "../core/digest.ts";
import { reject, type Rejection } from "../core/errors.ts";
import { fromHexFloat, toHexFloat } from "../core/hex_float.ts";
import type { Batch } from "./batch.ts";
import { configFromJson } from "./config.ts";
import { checkPartitionChain, type PartitionTrace } from "./forward_graph.ts";
import type { Manifest } from "./manifest.ts";
import {
  SCORE_FORMAT,
  type ScoreHead,
  type ScoreRecord,
  stackWindows,
  windowTargets,
} from "./score_record.ts";

/** What a score record must cover: the model scored and the assigned windows, in order. */
export interface ScoreExpect {
  readonly model_root: string;
  readonly windows: readonly Batch[];
}

const RECORD_KEYS = ["format", "model_root", "windows", "input", "traces", "head"];
const HEAD_KEYS = ["phase", "input", "losses", "targets", "argmax"];

function canonicalLoss(x: unknown): boolean {
  if (typeof x !== "string") return false;
  try {
    const v = fromHexFloat(x);
    return Number.isFinite(v) && v >= 0 && toHexFloat(v) === x;
  } catch {
    return false;
  }
}

/** Runs every graph check; `invalid_record` naming the first that fails. */
export function checkScore(
  record: unknown,
  traces: readonly unknown[],
  head: unknown,
  manifest: Manifest,
  expect: ScoreExpect,
): { ok: true; record: ScoreRecord; traces: PartitionTrace[]; head: ScoreHead } | Rejection {
  const fail = (why: string) => reject("invalid_record", `Cannot accept score record: ${why}`);
  if (!isObject(record) || !hasExactKeys(record, RECORD_KEYS)) return fail("its fields are wrong");
  const r = record as unknown as ScoreRecord;
  if (r.format !== SCORE_FORMAT) return fail(`format is ${JSON.stringify(r.format)}`);
  if (r.model_root !== expect.model_root) {
    return fail(`model_root is ${r.model_root}, the scored model is ${expect.model_root}`);
  }
  const roots = expect.windows.map((w) => id(w as unknown as JsonValue));
  if (
    !Array.isArray(r.windows) || r.windows.length !== roots.length || r.windows.some((w, i) => w !== roots[i])
  ) {
    return fail(`windows are not the assigned ${roots.length} windows in order`);
  }
  const batch = stackWindows(expect.windows);
  if (r.input !== id(batch as unknown as JsonValue)) {
    return fail("input is not the id of the stacked windows");
  }
  const chain = checkPartitionChain(r.traces, traces, r.input, manifest);
  if (!chain.ok) return fail(chain.why);
  const last = chain.traces[chain.traces.length - 1]!;
  if (!isObject(head) || !hasExactKeys(head, HEAD_KEYS) || id(head) !== r.head) {
    return fail("the head trace is malformed or does not match its id");
  }
  const h = head as unknown as ScoreHead;
  if (h.phase !== "head") return fail(`head phase is ${JSON.stringify(h.phase)}`);
  if (h.input !== last.output) return fail("head input is not the last partition's output");
  const B = roots.length, T = batch.input_ids[0]!.length;
  if (!Array.isArray(h.losses) || h.losses.length !== B || !h.losses.every(canonicalLoss)) {
    return fail(`losses are not ${B} canonical non-negative hex floats`);
  }
  const targets = expect.windows.map(windowTargets);
  if (!Array.isArray(h.targets) || h.targets.length !== B || h.targets.some((t, i) => t !== targets[i])) {
    return fail(`targets are [${String(h.targets)}], the windows have [${targets.join(",")}]`);
  }
  const V = configFromJson(manifest.config as unknown as JsonValue).vocab_size;
  const row = (a: unknown) =>
    Array.isArray(a) && a.length === T && a.every((x) => Number.isSafeInteger(x) && x >= 0 && x < V);
  if (!Array.isArray(h.argmax) || h.argmax.length !== B || !h.argmax.every(row)) {
    return fail(`argmax is not ${B} rows of ${T} ids below ${V}`);
  }
  return { ok: true, record: r, traces: chain.traces, head: h };
}
