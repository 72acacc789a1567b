/**
 * What a dispute over the pending claim needs from ledger state: the objects a challenge may name, the objects
 * a fraud challenge needs sealed, and the referee's verdict computed on the sealed bytes alone (§10.5, §5.3).
 * A training claim's challenged block is replayed with `replayBlock`; a growth with `replayGrowth` from the
 * parent's last block. The verdict depends only on the sealed bytes, the claim's committed metadata and genesis.
 */
import { Buffer } from "node:buffer";
import type { JsonValue } from "../../core/canonical.ts";
import { configFromJson } from "../../kernels/config.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { blockName } from "../../kernels/model.ts";
import { blockNeeded, replayBlock } from "../../kernels/block_referee.ts";
import { replayGrowth, type Verdict } from "../../kernels/referee.ts";
import type { StageTrace, StepRecord } from "../../kernels/trace.ts";
import type { Challenge } from "../../workflows/_claim.ts";
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

/** Decodes a sealed object's chunks into its bytes. */
export function sealedBytes(t: TrainingView, root: string): Uint8Array | undefined {
  const chunks = t.sealedChunks(root);
  if (!chunks) return undefined;
  return new Uint8Array(Buffer.concat(chunks.map((c) => Buffer.from(c, "base64"))));
}

/** Runs the referee over the live fraud challenge `c` of `job`, reading only the objects `c` has sealed. */
export function refereeVerdict(t: TrainingView, job: Job, c: Challenge): Verdict {
  const p = parts(t, job);
  const fetch = (root: string) => c.sealed.includes(root) ? sealedBytes(t, root) : undefined;
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
