/**
 * What a dispute over the pending claim needs from ledger state: the objects a challenge may name, the objects
 * a fraud challenge needs sealed, and the referee's verdict computed on the sealed bytes alone (§10.5, §5.3).
 * A training claim's challenged block is replayed with `replayBlock`; a growth with `replayGrowth` from the
 * parent's last block. The verdict depends only on the sealed bytes, the claim's committed metadata and genesis.
 */
import type { JsonValue } from "../../core/canonical.ts";
import { configFromJson } from "../../kernels/config.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { blockName } from "../../kernels/model.ts";
import { blockNeeded, replayBlock } from "../../kernels/block_referee.ts";
import { replayGrowth, type Verdict } from "../../kernels/referee.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import { chunkRoot } from "../../core/chunk_tree.ts";
import { committedChunkRoot } from "../../kernels/trace_chunks.ts";
import { assignedBatch } from "../data/schedule.ts";
import { claimObjects } from "./claim_check.ts";
import type { Job, TrainingView } from "./store.ts";

/** The parts of a claimed job a dispute reads. */
interface Parts {
  readonly parent: Manifest;
  readonly record: StepRecord | null;
  readonly traces: StageTrace[];
  readonly grown: Manifest | null;
}

function parts(t: TrainingView, job: Job): Parts {
  const parent = t.manifest(job.parent)!;
  const m = job.metadata!;
  if (job.kind === "growth") {
    return { parent, record: null, traces: [], grown: m[job.state.growth.model_root] as unknown as Manifest };
  }
  const s = job.state;
  const record = ("work" in s && s.work ? m[s.work.record_root] : null) as unknown as StepRecord;
  const traces = record.traces.map((r) => m[r] as unknown as StageTrace);
  return { parent, record, traces, grown: null };
}

function lastBlockRoot(parent: Manifest): string {
  const n = configFromJson(parent.config as JsonValue).num_hidden_layers;
  return parent.components[blockName(n - 1)]!;
}

/** The objects an availability challenge may name: every input and output of the claim. */
export function disputeObjects(t: TrainingView, job: Job): Set<string> {
  const p = parts(t, job);
  if (job.kind === "training") return claimObjects(p.parent, p.traces);
  const n = configFromJson(p.parent.config as JsonValue).num_hidden_layers;
  return new Set([lastBlockRoot(p.parent), p.grown!.components[blockName(n)]!]);
}

/**
 * The sorted objects a fraud challenge needs sealed: of a training step, those of the named block and phase
 * (`blockNeeded`; null when they name nothing of the stage); of a growth, the parent's last block only.
 */
export function fraudNeeded(
  t: TrainingView,
  job: Job,
  stage: number,
  block: unknown,
  phase: unknown,
): string[] | null {
  const p = parts(t, job);
  if (job.kind === "growth") return [lastBlockRoot(p.parent)];
  return blockNeeded(p.parent, p.traces[stage]!, stage, block, phase);
}

/**
 * Decodes a sealed object's chunks into its bytes, each straight into its place in one buffer of the sealed
 * size (the chunks were checked as strict base64 at `upload`): a `resolve` reads up to 15 MB this way, and
 * decoding into separate buffers and concatenating them cost it a few hundred milliseconds.
 */
export function sealedBytes(t: TrainingView, root: string): Uint8Array | undefined {
  const size = t.sealed(root)?.size;
  const chunks = t.sealedChunks(root);
  if (!chunks || size === undefined) return undefined;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) at += out.subarray(at).setFromBase64(c).written;
  return at === size ? out : undefined;
}

/**
 * The chunk root a training claim's traces commit for `root` (stage `stage`'s only, when given), or null: on
 * a growth, or for an object no trace keys (PROTOCOL §10.4 "Chunk roots").
 */
export function claimChunkRoot(t: TrainingView, job: Job, root: string, stage?: number): string | null {
  if (job.kind !== "training") return null;
  const traces = parts(t, job).traces;
  return committedChunkRoot(stage === undefined ? traces : traces.slice(stage, stage + 1), root);
}

/** Runs the referee over the live fraud challenge `c` of `job`, reading only the objects `c` has sealed. */
export function refereeVerdict(t: TrainingView, job: Job, c: Challenge): Verdict {
  const p = parts(t, job);
  const fetch = (root: string) => c.sealed.includes(root) ? sealedBytes(t, root) : undefined;
  if (c.phase === "chunks") {
    // A `chunks` challenge: the tree of the sealed bytes against the chunk root the stage committed.
    const root = c.object_root!, committed = committedChunkRoot([p.traces[c.stage]!], root)!;
    const computed = chunkRoot(fetch(root)!);
    return computed === committed ? { verdict: "match" } : {
      verdict: "mismatch",
      what: "chunk root",
      message: `Cannot accept chunk root of ${root}: its chunks make ${computed}, committed ${committed}`,
    };
  }
  if (job.kind === "growth") {
    const g = job.state.growth;
    return replayGrowth(p.parent, job.parent, fetch(lastBlockRoot(p.parent)), g.added_blocks, g.model_root);
  }
  if (job.state.status === "reserved") throw new Error(`Cannot referee job ${job.id}: it is not claimed`);
  const batch = assignedBatch(t, job.state.assignment);
  const trace = p.traces[c.stage]!;
  return replayBlock({
    parent: p.parent,
    batch,
    stage: c.stage,
    trace,
    block: c.block!,
    phase: c.phase!,
    fetch,
  });
}
