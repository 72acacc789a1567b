/**
 * The epoch's optional identity growth (PROTOCOL §5.3): before the first step of an activated cohort, when the
 * config asks for `growth.blocks` more blocks and the workers' capacities can hold the grown model, the
 * controller builds the grown manifest from the parent's last block alone (`kernels/growth.ts`), puts the
 * identity block and the manifest on every worker (so any placement finds them), submits `grow` through the
 * lost-acknowledgement-safe submitter of its own journal under the intent `grow:<epoch>`, and waits for the
 * chain to decide the claim (settled after its challenge window, or rejected if a referee refutes it). When the
 * grown model does not fit, or the chain refuses the growth (e.g. the period's growth budget is spent), the
 * epoch trains the model as it is; the outcome says why.
 *
 * @example
 * ```ts
 * import { growIfRoom } from "./growth.ts";
 * // const g = await growIfRoom({ chain, home, submitter, workers, entries, blocks: 1, epoch: 1, say, pollMs });
 * // g.status; // "settled" | "rejected" | "skipped"
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { ProtocolError, RetryableError } from "../../core/errors.ts";
import { configFromJson } from "../../kernels/config.ts";
import { growManifest } from "../../kernels/growth.ts";
import { blockName } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { txid } from "../../ledger/envelope.ts";
import { growMetadata } from "../../ledger/training/wire.ts";
import { type ChainClient, envelopeOf } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import { submitSettled } from "../common/publish.ts";
import type { WorkerClient, WorkerEntry } from "../common/worker_client.ts";
import type { Submitter } from "../runtime/submit.ts";

/** How an epoch's growth ended (journaled). */
export interface GrowthOutcome extends JsonObject {
  status: "settled" | "rejected" | "skipped";
  blocks: number;
  parent: string | null;
  model_root: string | null;
  growth_id: string | null;
  reason: string | null;
}

/** What a growth needs. */
export interface GrowthSetup {
  readonly chain: ChainClient;
  readonly home: Home;
  readonly submitter: Submitter;
  readonly workers: readonly WorkerClient[];
  readonly entries: readonly WorkerEntry[];
  readonly blocks: number;
  readonly epoch: number;
  readonly say: (line: string) => void;
  readonly pollMs: number;
}

const FINAL = new Set(["settled", "rejected", "expired"]);

/** Grows the learning model by `blocks` identity blocks when the workers can hold it (see the module comment). */
export async function growIfRoom(g: GrowthSetup): Promise<GrowthOutcome> {
  const intent = `grow:${g.epoch}`;
  const recorded = g.submitter.record(intent);
  const lc = await g.chain.lifecycle();
  const parent = recorded === null
    ? lc.learning_root
    : (envelopeOf(recorded.raw).body as { parent: string }).parent;
  if (parent === null) {
    throw new ProtocolError("invalid_value", "Cannot grow: the chain has no learning model");
  }
  const manifest = await g.chain.manifest(parent);
  const config = configFromJson(manifest.config);
  const capacities = g.entries.map((e) => e.capacity);
  const grown = { ...config, num_hidden_layers: config.num_hidden_layers + g.blocks };
  const outcome = (status: GrowthOutcome["status"], rest: Partial<GrowthOutcome>): GrowthOutcome => ({
    status,
    blocks: g.blocks,
    parent,
    model_root: null,
    growth_id: null,
    reason: null,
    ...rest,
  });
  if (recorded === null) {
    try {
      place(grown, capacities);
    } catch (e) {
      if (!(e instanceof ProtocolError) || e.code !== "placement_failed") throw e;
      const reason = `the ${grown.num_hidden_layers}-layer model does not fit the workers' capacities`;
      g.say(`growth skipped: ${reason}`);
      return outcome("skipped", { reason });
    }
  }
  const last = manifest.components[blockName(config.num_hidden_layers - 1)]!;
  const built = growManifest(manifest, parent, await fetchAnywhere(g.workers, last), g.blocks);
  for (const w of g.workers) for (const bytes of built.objects.values()) await w.putObject(bytes);
  g.say(`growth: ${config.num_hidden_layers} → ${grown.num_hidden_layers} layers, model ${built.root}`);
  const sub = await submitSettled(g.submitter, intent, () =>
    g.chain.sign(g.home.key, "grow", {
      parent,
      model_root: built.root,
      metadata: growMetadata(built.manifest),
      capacities,
    }));
  if (sub.status === "rejected") {
    const reason = `${sub.code}: ${sub.message}`;
    g.say(`growth refused: ${reason}`);
    return outcome("rejected", { model_root: built.root, reason });
  }
  const id = txid(envelopeOf(sub.raw) as never);
  for (;;) {
    const c = await g.chain.claim(id).catch(() => null);
    const state = c?.state as { status?: string; reason?: string } | undefined;
    if (state?.status !== undefined && FINAL.has(state.status)) {
      const settled = state.status === "settled";
      g.say(`growth ${id} ${state.status}`);
      return outcome(settled ? "settled" : "rejected", {
        model_root: built.root,
        growth_id: id,
        reason: settled ? null : `${state.status}${state.reason ? `: ${state.reason}` : ""}`,
      });
    }
    await new Promise((r) => setTimeout(r, g.pollMs));
  }
}

/** The bytes of object `root` from the first worker that has it. */
async function fetchAnywhere(workers: readonly WorkerClient[], root: string): Promise<Uint8Array> {
  for (const w of workers) {
    try {
      return await w.getObject(root);
    } catch { /* try the next */ }
  }
  throw new RetryableError(`Cannot grow: no worker holds block ${root}`);
}
