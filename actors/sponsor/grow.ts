/**
 * The Sponsor's growth (PROTOCOL §5.3): grow the learning model by `added` identity blocks and wait until the
 * chain decides the growth. The grown manifest is computed from the parent manifest and the bytes of its last
 * block only (`growManifest`, fetched from a worker that holds it); the new identity block is stored on the
 * workers the grown placement gives the new blocks, so the next step finds it there; the `grow` transaction
 * carries the workers file's capacities, on which the ledger checks the grown model can be placed.
 *
 * Restart safety: the parent is written to `DIR/grow.json` (fsynced) before anything is signed, and the
 * transaction goes through the submitter under the intent `grow:<parent>:<added>`, so a restarted sponsor
 * settles the journaled bytes instead of signing a second growth, and never grows a model it already grew.
 *
 * @example
 * ```ts
 * import { growOnce } from "./grow.ts";
 * // const outcome = await growOnce({ home, chain, workers, entries, added: 4, emit: console.log });
 * // outcome.status; // "settled"
 * ```
 */
import { canonical, isObject, type JsonObject, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
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
  claim_id: string;
  parent: string;
  model_root: string;
  status: string;
  reason: string | null;
  /** Parameters the growth added. */
  added_parameters: number;
  /** Bytes of the parent's last block, all a referee needs to check the growth. */
  last_block_bytes: number;
}

const FINAL = new Set(["settled", "rejected", "expired"]);

/** The parent this home grows: the one recorded in `grow.json`, or the learning root recorded now. */
async function parentOf(setup: GrowSetup): Promise<string> {
  const path = `${setup.home.paths.dir}/grow.json`;
  try {
    const v = parseJson(await Deno.readTextFile(path));
    if (isObject(v) && typeof v.parent === "string" && v.added === setup.added) return v.parent;
    throw new ProtocolError(
      "conflicting_operation",
      `Cannot grow: ${path} records ${canonical(v)}, expected a growth by ${setup.added}`,
    );
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const lc = await setup.chain.lifecycle();
  if (lc.learning_root === null) {
    throw new ProtocolError("invalid_value", "Cannot grow: the chain has no learning model");
  }
  const tmp = `${path}.tmp`;
  const file = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o644 });
  try {
    await file.write(
      new TextEncoder().encode(canonical({ added: setup.added, parent: lc.learning_root }) + "\n"),
    );
    await file.sync();
  } finally {
    file.close();
  }
  await Deno.rename(tmp, path);
  return lc.learning_root;
}

/** The bytes of `root` from the first worker that holds it. */
async function fromWorkers(
  workers: readonly WorkerClient[],
  root: string,
  what: string,
): Promise<Uint8Array> {
  for (const w of workers) {
    if (await w.hasObject(root).catch(() => false)) return await w.getObject(root);
  }
  throw new ProtocolError("object_not_found", `Cannot grow: no worker holds ${what} (${root})`);
}

/** Grows the learning model once (see the module comment) and returns the chain's decision. */
export async function growOnce(setup: GrowSetup): Promise<GrowOutcome> {
  const { chain, home, added } = setup;
  const parentRoot = await parentOf(setup);
  const parent = await chain.manifest(parentRoot);
  const config = configFromJson(parent.config);
  const last = blockName(config.num_hidden_layers - 1);
  const lastBytes = await fromWorkers(setup.workers, parent.components[last]!, `the parent's ${last}`);
  const grown = growManifest(parent, parentRoot, lastBytes, added);
  const capacities = setup.entries.map((e) => e.capacity);
  const partitions = place(configFromJson(grown.manifest.config), capacities);
  const fresh = grown.manifest.components[blockName(config.num_hidden_layers)]!;
  for (const [stage, names] of partitions.entries()) {
    if (names.some((n) => grown.manifest.components[n] === fresh)) {
      await setup.workers[stage]!.putObject(grown.objects.get(fresh)!);
    }
  }
  const submitter = new Submitter(home.journal, chain.http, { confirmMs: 30_000, pollMs: 200 });
  const intent = `grow:${parentRoot}:${added}`;
  setup.emit({
    event: "grow",
    phase: submitter.record(intent) === null ? "submit" : "resume",
    parent: parentRoot,
  });
  const s = await submitSettled(submitter, intent, () =>
    chain.sign(home.key, "grow", {
      parent: parentRoot,
      model_root: grown.root,
      metadata: growMetadata(grown.manifest),
      capacities,
    }));
  const claimId = txid(envelopeOf(s.raw) as never);
  const outcome = (status: string, reason: string | null): GrowOutcome => ({
    claim_id: claimId,
    parent: parentRoot,
    model_root: grown.root,
    status,
    reason,
    added_parameters: grown.manifest.parameters - parent.parameters,
    last_block_bytes: lastBytes.length,
  });
  if (s.status === "rejected") return outcome("refused", `${s.code}: ${s.message}`);
  setup.emit({ event: "grow", phase: "challenge window", claim_id: claimId, height: s.height ?? null });
  for (;;) {
    const c = await chain.claim(claimId).catch(() => null);
    const state = c?.state as { status?: string; reason?: string } | undefined;
    if (state?.status !== undefined && FINAL.has(state.status)) {
      return outcome(state.status, state.reason ?? null);
    }
    await new Promise((r) => setTimeout(r, setup.pollMs ?? 300));
  }
}
