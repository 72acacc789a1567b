/**
 * What an actor needs from the chain's genesis to apply the `training` machine as the ledger does: the
 * lifecycle params (`env.params`), the training batches and their data root, the learning rate and clip.
 * The RPC does not serve the genesis, so it is read from a file next to the actor's home (the devnet layout
 * `<dir>/genesis.json` beside `<dir>/sponsor`, the test layout `<dir>/net/genesis.json`) or a given path,
 * and used only when its id equals the `genesis_id` the validator reports.
 *
 * @example
 * ```ts
 * import { findChainSetup } from "./chain_setup.ts";
 * // const setup = await findChainSetup(chain, "/tmp/devnet/sponsor"); // null when no genesis matches
 * ```
 */
import { dirname } from "node:path";
import { type JsonValue, parseJson } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { genesisId, parseGenesis } from "../../genesis/schema.ts";
import type { Batch } from "../../kernels/batch.ts";
import type { WorkflowParams } from "../../workflows/params.ts";
import type { ChainClient } from "./chain.ts";

/** The genesis facts the training machine and the ledger's claim checks read. */
export interface ChainSetup {
  readonly genesisPath: string;
  readonly params: WorkflowParams;
  readonly batches: readonly Batch[];
  /**
   * True when the chain trains on admitted cohorts (a genesis `data` section): `batches` is empty and each
   * assignment's batch is the one its cohort's schedule binds, read from the chain.
   */
  readonly data: boolean;
  /** `id` of the list of batch ids, as the ledger's lifecycle reports it (genesis batches only). */
  readonly data_root: string;
  readonly learning_rate: string;
  readonly clip: string;
}

/** The genesis files tried for a home at `homeDir`, in order. */
export function genesisCandidates(homeDir: string): string[] {
  const up = dirname(homeDir);
  return [`${up}/genesis.json`, `${up}/net/genesis.json`];
}

/**
 * The setup of the chain `chain` serves, from the first of `paths` (default: `genesisCandidates(homeDir)`)
 * whose genesis id matches and which has a training section; null when none does.
 */
export async function findChainSetup(
  chain: ChainClient,
  homeDir: string,
  paths: readonly string[] = genesisCandidates(homeDir),
): Promise<ChainSetup | null> {
  const want = (await chain.http.json("GET", "/status") as { genesis_id?: string }).genesis_id;
  for (const path of paths) {
    let value: JsonValue;
    try {
      value = parseJson(await Deno.readTextFile(path));
    } catch {
      continue;
    }
    if (genesisId(value) !== want) continue;
    const g = parseGenesis(value);
    if (g.training === null) return null;
    const batches = g.training.batches;
    return {
      genesisPath: path,
      params: g.params,
      batches,
      data: g.data !== null,
      data_root: id(batches.map((b) => id(b as unknown as JsonValue))),
      learning_rate: g.training.learning_rate,
      clip: g.training.clip,
    };
  }
  return null;
}
