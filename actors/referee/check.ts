/**
 * The referee's check of one stage of one claim (PROTOCOL §10.5): read the claim's record and trace from
 * its metadata, fetch the stage's inputs (parent components, input activation or head input, incoming
 * gradient) — from the referee's own store, the workers, or the chain's sealed uploads — keep them in the
 * store as evidence, and replay the stage with the kernels, comparing every block-boundary commitment. The
 * answer is `match`, `mismatch` (with what was forged and, on a training stage, the first forged block and
 * its phase, whose needed block-boundary files the replay computed and the store now keeps), `unavailable` (an object nobody serves, with its root) or `error` (the replay itself failed,
 * which never decides a dispute).
 *
 * @example
 * ```ts
 * import { checkStage } from "./check.ts";
 * // const v = await checkStage({ chain, store, workers }, claimId, 1); // {verdict: "match"}
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import type { ObjectStore } from "../../core/object_store.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { Batch } from "../../kernels/batch.ts";
import { configFromJson } from "../../kernels/config.ts";
import { blockName } from "../../kernels/model.ts";
import { blockNeeded } from "../../kernels/block_referee.ts";
import { replayGrowth, replayStage } from "../../kernels/referee.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import { chunkRoot } from "../../core/chunk_tree.ts";
import type { ChainClient } from "../common/chain.ts";
import type { WorkerClient } from "../common/worker_client.ts";

/** Where the referee finds things. */
export interface CheckSources {
  readonly chain: ChainClient;
  readonly store: ObjectStore;
  readonly workers: readonly WorkerClient[];
}

/** A stage's verdict as journaled. */
export interface StageVerdict extends JsonObject {
  verdict: "match" | "mismatch" | "unavailable" | "error";
  what: string | null;
  root: string | null;
  message: string;
  /**
   * A training stage's mismatch: the first forged block (an index in the stage, or `"head"`) and its phase;
   * or phase `chunks` (no block) with `root` the object whose committed chunk root is not its tree.
   */
  block?: number | "head";
  phase?: "forward" | "backward" | "update" | "chunks";
}

/**
 * The first of `roots` (sorted) whose chunk root the trace commits wrongly, by the bytes in `known`; null
 * when every one it can check is right.
 */
function wrongChunkRoot(
  trace: StageTrace,
  roots: Iterable<string>,
  known: (r: string) => Uint8Array | undefined,
) {
  for (const r of [...roots].sort()) {
    const b = known(r), committed = trace.chunk_roots?.[r];
    if (b !== undefined && committed !== undefined && chunkRoot(b) !== committed) return r;
  }
  return null;
}

function chunksVerdict(trace: StageTrace, root: string, known: (r: string) => Uint8Array | undefined) {
  const v: StageVerdict = {
    verdict: "mismatch",
    what: "chunk root",
    root,
    message: `the committed chunk root of ${root} is ${trace.chunk_roots[root]}, its bytes make ${
      chunkRoot(known(root)!)
    }`,
    phase: "chunks",
  };
  return v;
}

/** The claim's record and traces from the chain. */
export async function claimRecord(
  chain: ChainClient,
  claimId: string,
): Promise<{ record: StepRecord; traces: StageTrace[]; state: JsonObject }> {
  const c = await chain.claim(claimId);
  if (c === null) {
    throw new ProtocolError("not_found", `Cannot check claim ${claimId}: the chain does not know it`);
  }
  const work = (c.state as { work?: { record_root?: string } }).work;
  const recordRoot = work?.record_root;
  const record = recordRoot === undefined
    ? undefined
    : c.metadata[recordRoot] as unknown as StepRecord | undefined;
  if (record === undefined || !Array.isArray(record.traces)) {
    throw new ProtocolError("invalid_record", `Cannot check claim ${claimId}: its metadata has no record`);
  }
  const traces = record.traces.map((r) => c.metadata[r] as unknown as StageTrace);
  return { record, traces, state: c.state };
}

/** The roots stage `stage` needs to be replayed (besides the batch, which the chain serves). */
export function stageInputs(
  trace: StageTrace,
  parentComponents: Record<string, string>,
  stage: number,
): string[] {
  const roots = trace.partition.map((n) => parentComponents[n]!);
  if (stage === 0) roots.push(trace.head_input!);
  else roots.push(trace.input);
  roots.push(trace.gradient_out);
  return roots;
}

/** Fetches `root` from the store, a worker, or the chain; stores it; null when nobody has it. */
export async function fetchObject(src: CheckSources, root: string): Promise<Uint8Array | null> {
  if (await src.store.has(root)) return await src.store.get(root);
  for (const w of src.workers) {
    try {
      const bytes = await w.getObject(root);
      await src.store.put(bytes);
      return bytes;
    } catch { /* the next source */ }
  }
  const sealed = await src.chain.object(root).catch(() => null);
  if (sealed !== null) {
    await src.store.putExpected(root, sealed);
    return sealed;
  }
  return null;
}

/** Checks stage `stage` of claim `claimId` (see the module comment). */
export async function checkStage(src: CheckSources, claimId: string, stage: number): Promise<StageVerdict> {
  const { record, traces } = await claimRecord(src.chain, claimId);
  const trace = traces[stage];
  if (trace === undefined) {
    return {
      verdict: "mismatch",
      what: "forward output",
      root: null,
      message: `stage ${stage} has no trace`,
    };
  }
  const parent = await src.chain.manifest(record.parent);
  const batch: Batch = await src.chain.batch(record.batch);
  const bytes = new Map<string, Uint8Array>();
  for (const root of stageInputs(trace, parent.components, stage)) {
    const b = await fetchObject(src, root);
    if (b === null) {
      return { verdict: "unavailable", what: null, root, message: `no worker serves ${root}` };
    }
    bytes.set(root, b);
  }
  const boundaries = new Map<string, Uint8Array>();
  const keep = (root: string, b: Uint8Array) => boundaries.set(root, b);
  const v = replayStage({ parent, batch, stage, trace, fetch: (r) => bytes.get(r), keep });
  // A committed chunk root that is not the tree of the object's bytes is fraud of its own (a `chunks`
  // challenge), and one on an object the block challenge needs would block its uploads: it goes first.
  const known = (r: string) => bytes.get(r) ?? boundaries.get(r);
  const all = [...bytes.keys(), ...boundaries.keys()];
  if (v.verdict === "match") {
    const wrong = wrongChunkRoot(trace, all, known);
    if (wrong !== null) {
      await src.store.put(known(wrong)!);
      return chunksVerdict(trace, wrong, known);
    }
    return { verdict: "match", what: null, root: null, message: "" };
  }
  if (v.verdict === "mismatch" && v.block !== undefined && v.phase !== undefined) {
    const needed = blockNeeded(parent, trace, stage, v.block, v.phase) ?? [];
    const wrong = wrongChunkRoot(trace, needed, known);
    if (wrong !== null) {
      await src.store.put(known(wrong)!);
      return chunksVerdict(trace, wrong, known);
    }
    // Keep what the pinpointed challenge will upload: the block's input and incoming gradient were computed
    // here (they match the committed roots, the forged block being the first that differs).
    for (const root of needed) {
      const b = boundaries.get(root);
      if (b !== undefined && !(await src.store.has(root))) await src.store.put(b);
    }
    return {
      verdict: "mismatch",
      what: v.what,
      root: null,
      message: v.message,
      block: v.block,
      phase: v.phase,
    };
  }
  if (v.verdict === "mismatch") return { verdict: "mismatch", what: v.what, root: null, message: v.message };
  return { verdict: "error", what: null, root: null, message: v.message };
}

/** Checks a growth claim (PROTOCOL §5.3): replays the grown manifest from the parent's last block alone. */
export async function checkGrowth(src: CheckSources, claimId: string): Promise<StageVerdict> {
  const c = await src.chain.claim(claimId);
  if (c === null) {
    throw new ProtocolError("not_found", `Cannot check growth ${claimId}: the chain does not know it`);
  }
  const g = (c.state as { growth?: { parent: string; model_root: string; added_blocks: number } }).growth;
  if (g === undefined) {
    throw new ProtocolError("invalid_record", `Cannot check growth ${claimId}: it is not a growth`);
  }
  const parent = await src.chain.manifest(g.parent);
  const last = parent.components[blockName(configFromJson(parent.config).num_hidden_layers - 1)]!;
  const bytes = await fetchObject(src, last);
  if (bytes === null) {
    return { verdict: "unavailable", what: null, root: last, message: `no worker serves ${last}` };
  }
  const v = replayGrowth(parent, g.parent, bytes, g.added_blocks, g.model_root);
  if (v.verdict === "match") return { verdict: "match", what: null, root: null, message: "" };
  if (v.verdict === "mismatch") return { verdict: "mismatch", what: v.what, root: null, message: v.message };
  return { verdict: "error", what: null, root: null, message: v.message };
}
