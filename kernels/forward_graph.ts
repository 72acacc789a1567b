/**
 * The forward graph of a record by partition, shared by generation records (PROTOCOL §8.1) and score records
 * (§7): the partitions run forward in order over one token batch `[B, T]`, each committing a trace
 * `{phase: "forward", partition, input, output}` whose `input` is the id the record gives the batch on
 * partition 0 and the previous partition's output otherwise, and whose `output` is the root of its activation
 * `[B, T, C]` as a single-tensor file. What is built once here:
 *
 * - `forwardPartitions`: runs and commits the graph (honestly), returning the final hidden state for a head.
 * - `checkPartitionChain`: the graph checks of §10.4 that need no neural work — every trace matches its id,
 *   partition 0 is fed the batch, partition i is fed partition i−1's output, the partitions cover the model's
 *   components in model order exactly once with `embed` and `norm` on partition 0.
 * - `partitionNeeded` and `replayPartition`: what a fraud challenge of a partition needs sealed (its
 *   components and, past partition 0, its input activation) and the stage referee's forward path over those
 *   bytes alone; a different output root is `forward output`.
 *
 * @example
 * ```ts
 * import { forwardPartitions } from "./forward_graph.ts";
 * // const g = forwardPartitions(model, shape, [["embed", "norm", "block_000"]], id(ids));
 * // g.traces[0].output === sha256Hex(g.objects.get(g.traces[0].output)!)
 * ```
 */
import { hasExactKeys, isObject } from "../core/canonical.ts";
import { id, sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import { isRoot } from "../core/hex.ts";
import { configFromJson, headDim, type ModelConfig } from "./config.ts";
import { type Manifest, readComponent } from "./manifest.ts";
import { blockIndex, type Model } from "./model.ts";
import { fetchChecked, phase } from "./referee.ts";
import { rotaryTables } from "./rotary.ts";
import { readValue, type Tensors, writeValue } from "./safetensors.ts";
import { stageForward, type StepShape } from "./stage.ts";
import type { JsonValue } from "../core/canonical.ts";

/** One partition's forward trace. */
export interface PartitionTrace {
  readonly phase: "forward";
  readonly partition: string[];
  readonly input: string;
  readonly output: string;
}

/** A committed forward graph and the final hidden state `[B·T, C]` a head reads. */
export interface ForwardGraph {
  readonly traces: PartitionTrace[];
  /** Every activation the graph commits, by root. */
  readonly objects: Map<string, Uint8Array>;
  readonly hidden: Float32Array;
}

/** The shape every partition of a forward over `ids` `[B·T]` shares. */
export function forwardShape(config: ModelConfig, B: number, T: number, ids: readonly number[]): StepShape {
  return {
    config,
    B,
    T,
    ids: Int32Array.from(ids),
    tables: rotaryTables(T, headDim(config), config.rope_theta),
  };
}

/** Runs `partitions` in order over `shape`; partition 0's trace input is `input` (the record's batch id). */
export function forwardPartitions(
  model: Model,
  shape: StepShape,
  partitions: readonly (readonly string[])[],
  input: string,
): ForwardGraph {
  const act = [shape.B, shape.T, model.config.hidden_size];
  const objects = new Map<string, Uint8Array>();
  const traces: PartitionTrace[] = [];
  let x: Float32Array | null = null; // x: [B·T, C]
  let from = input;
  for (const partition of partitions) {
    const components = Object.fromEntries(partition.map((name) => [name, model.components[name]!]));
    const out: Float32Array = stageForward(shape, partition, components, x).output;
    const bytes = writeValue({ shape: act, data: out });
    const output = sha256Hex(bytes);
    objects.set(output, bytes);
    traces.push({ phase: "forward", partition: [...partition], input: from, output });
    x = out;
    from = output;
  }
  if (x === null) throw new ProtocolError("invalid_record", "Cannot run a forward graph: no partitions");
  return { traces, objects, hidden: x };
}

/** The model's components in model order: `embed`, `norm`, then blocks numerically. */
export function modelOrder(names: readonly string[]): string[] {
  const rank = (n: string) =>
    n === "embed" ? -2 : n === "norm" ? -1 : blockIndex(n) >= 0 ? blockIndex(n) : Infinity;
  return [...names].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The partition checks of a record whose `traces` lists trace ids and whose partition 0 is fed `input`;
 * the typed traces, or the reason the first failing check gives (the caller words the rejection).
 */
export function checkPartitionChain(
  ids: unknown,
  traces: readonly unknown[],
  input: string,
  manifest: Manifest,
): { ok: true; traces: PartitionTrace[] } | { ok: false; why: string } {
  const fail = (why: string) => ({ ok: false as const, why });
  const S = traces.length;
  if (!Array.isArray(ids) || ids.length !== S || S < 1) return fail(`has ${S} partition traces`);
  const typed: PartitionTrace[] = [];
  for (let i = 0; i < S; i++) {
    const t = traces[i];
    if (!isObject(t) || !hasExactKeys(t, ["phase", "partition", "input", "output"])) {
      return fail(`trace ${i} has the wrong fields`);
    }
    if (id(t) !== ids[i]) return fail(`trace ${i} does not match its id`);
    const p = t as unknown as PartitionTrace;
    if (p.phase !== "forward" || !isRoot(p.input) || !isRoot(p.output)) {
      return fail(`trace ${i} is malformed`);
    }
    if (
      !Array.isArray(p.partition) || p.partition.length === 0 ||
      !p.partition.every((x) => typeof x === "string")
    ) {
      return fail(`trace ${i} partition is malformed`);
    }
    const want = i === 0 ? input : typed[i - 1]!.output;
    if (p.input !== want) {
      return fail(
        `partition ${i} input is not ${i === 0 ? "the record's input" : `partition ${i - 1}'s output`}`,
      );
    }
    typed.push(p);
  }
  const order = typed.flatMap((t) => t.partition);
  const expected = modelOrder(Object.keys(manifest.components));
  if (order.join(",") !== expected.join(",")) {
    return fail(`partitions cover ${order.join(",")}, expected ${expected.join(",")} in that order`);
  }
  if (typed[0]!.partition[0] !== "embed" || typed[0]!.partition[1] !== "norm") {
    return fail("partition 0 must own embed and norm");
  }
  return { ok: true, traces: typed };
}

/** The sorted roots a fraud challenge of partition `stage` needs sealed. */
export function partitionNeeded(
  manifest: Manifest,
  traces: readonly PartitionTrace[],
  stage: number,
): string[] {
  const t = traces[stage]!;
  const roots = [...t.partition.map((n) => manifest.components[n]!), ...(stage > 0 ? [t.input] : [])];
  return [...new Set(roots)].sort();
}

/** The components `names` of `manifest`, read from sealed bytes (each checked against its root). */
export function sealedComponents(
  manifest: Manifest,
  names: readonly string[],
  fetch: (root: string) => Uint8Array | undefined,
): Record<string, Tensors> {
  const config = configFromJson(manifest.config as unknown as JsonValue);
  const out: Record<string, Tensors> = {};
  for (const name of names) {
    out[name] = readComponent(
      config,
      name,
      fetchChecked({ fetch }, manifest.components[name], `component ${name}`),
    );
  }
  return out;
}

/**
 * Replays partition `stage` over the batch `ids` `[B, T]` from its sealed components and (past partition 0)
 * sealed input activation; throws a `forward output` mismatch when anything differs or is malformed.
 */
export function replayPartition(
  manifest: Manifest,
  trace: PartitionTrace,
  stage: number,
  batch: { readonly B: number; readonly T: number; readonly ids: readonly number[] },
  fetch: (root: string) => Uint8Array | undefined,
): void {
  phase("forward output", () => {
    const config = configFromJson(manifest.config as unknown as JsonValue);
    const act = [batch.B, batch.T, config.hidden_size];
    const parts = sealedComponents(manifest, trace.partition, fetch);
    const x = stage === 0
      ? null
      : readValue(fetchChecked({ fetch }, trace.input, "input activation"), act).data;
    const out =
      stageForward(forwardShape(config, batch.B, batch.T, batch.ids), trace.partition, parts, x).output;
    const root = sha256Hex(writeValue({ shape: act, data: out }));
    if (root !== trace.output) {
      throw new ProtocolError(
        "invalid_record",
        `Cannot replay: output is ${root}, committed ${trace.output}`,
      );
    }
  });
}
