/**
 * The Sponsor's growth (`deno task sponsor --grow N`, PROTOCOL §5.3): the epoch controller's `growIfRoom`
 * (`../epoch/growth.ts`: the grown manifest from the parent manifest and its last block, the identity block on
 * every worker, `grow` with the workers file's capacities through the journaled submitter, then the chain's
 * decision), run from the sponsor's home with the training round as the intent's discriminator (`grow:<round>`:
 * a growth keeps the round, so a restarted sponsor settles the journaled transaction instead of growing twice),
 * plus the figures a report wants: the parameters added and the bytes of the parent's last block (all a referee
 * needs to check it).
 *
 * @example
 * ```ts
 * import { growOnce } from "./grow.ts";
 * // const outcome = await growOnce({ home, chain, workers, entries, added: 4, emit: console.log });
 * // outcome.status; // "settled"
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { configFromJson } from "../../kernels/config.ts";
import { blockName } from "../../kernels/model.ts";
import type { ChainClient } from "../common/chain.ts";
import type { Home } from "../common/home.ts";
import type { WorkerClient, WorkerEntry } from "../common/worker_client.ts";
import { growIfRoom } from "../epoch/growth.ts";
import { Submitter } from "../runtime/submit.ts";

/** What a growth runs with. */
export interface GrowSetup {
  readonly home: Home;
  readonly chain: ChainClient;
  /** The workers file's workers, in its order. */
  readonly workers: readonly WorkerClient[];
  readonly entries: readonly WorkerEntry[];
  /** Identity blocks to add (1-16). */
  readonly added: number;
  readonly emit: (e: JsonObject) => void;
  readonly pollMs?: number;
}

/** How the chain decided the growth. */
export interface GrowOutcome extends JsonObject {
  claim_id: string | null;
  parent: string | null;
  model_root: string | null;
  /** `settled`, `rejected` or `skipped` (the grown model does not fit the workers file's capacities). */
  status: string;
  reason: string | null;
  /** Parameters the growth added (0 unless settled). */
  added_parameters: number;
  /** Bytes of the parent's last block, all a referee needs to check the growth. */
  last_block_bytes: number;
}

/** Grows the learning model once (see the module comment) and returns the chain's decision. */
export async function growOnce(setup: GrowSetup): Promise<GrowOutcome> {
  const { chain, home } = setup;
  const submitter = new Submitter(home.journal, chain.http, { confirmMs: 30_000, pollMs: 200 });
  const round = (await chain.lifecycle()).training_round;
  const g = await growIfRoom({
    chain,
    home,
    submitter,
    workers: setup.workers,
    entries: setup.entries,
    blocks: setup.added,
    epoch: round,
    say: (line) => setup.emit({ event: "grow", phase: line }),
    pollMs: setup.pollMs ?? 300,
  });
  let added = 0, lastBytes = 0;
  if (g.parent !== null) {
    const parent = await chain.manifest(g.parent);
    const last = parent.components[blockName(configFromJson(parent.config).num_hidden_layers - 1)]!;
    for (const w of setup.workers) {
      const bytes = await w.getObject(last).catch(() => null);
      if (bytes !== null) {
        lastBytes = bytes.length;
        break;
      }
    }
    if (g.status === "settled") added = (await chain.manifest(g.model_root!)).parameters - parent.parameters;
  }
  return {
    claim_id: g.growth_id,
    parent: g.parent,
    model_root: g.model_root,
    status: g.status,
    reason: g.reason,
    added_parameters: added,
    last_block_bytes: lastBytes,
  };
}
