/** Reserve-and-claim flows shared by the training ledger tests. */
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id, sha256Hex } from "../../../core/digest.ts";
import { configFromJson } from "../../../kernels/config.ts";
import { growManifest } from "../../../kernels/growth.ts";
import type { Manifest } from "../../../kernels/manifest.ts";
import { blockName } from "../../../kernels/model.ts";
import { growMetadata } from "../../../ledger/training/wire.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { place } from "../../../kernels/placement.ts";
import type { Envelope } from "../../../ledger/envelope.ts";
import type { AccountKey } from "../../../ledger/keys.ts";
import { uploadChunks, uploadPaths } from "../../../ledger/training/wire.ts";
import { answerChunkTree } from "../../../actors/common/publish.ts";
import { CHAIN, CLIP, LR, type Net, sponsor, workers } from "./_harness.ts";
import { computeStep, type Forge, metadataFor, type SyntheticStep, tamper } from "./_pipeline.ts";

/** Two stages: embed and norm, then the four blocks. */
export const TWO_STAGES: string[][] = place(PRESETS.devnet, [700_000, 1_000_000]);

/** A reserve by the sponsor for the current learning root and round. */
export function reserveTx(net: Net, keys: readonly AccountKey[] = workers.slice(0, 2)): Envelope {
  const l = net.lifecycle();
  return net.tx(sponsor, "reserve", {
    parent: l.learning_root as string,
    round: l.training_round as number,
    workers: keys.map((k) => k.accountId),
  });
}

/** Computes the step of the live assignment (optionally forged) and its claim transaction. */
export function claimFor(
  net: Net,
  opts: { forge?: Forge; partitions?: string[][]; keys?: readonly AccountKey[]; lr?: number } = {},
): { claim: Envelope; step: SyntheticStep; fields: JsonObject } {
  const l = net.lifecycle();
  const a = l.assignment as JsonObject;
  const partitions = opts.partitions ?? TWO_STAGES;
  const keys = opts.keys ?? workers.slice(0, partitions.length);
  const parent = net.app.query(`/manifest?root=${l.learning_root}`) as never;
  const batch = net.app.query(`/batch?root=${a.batch}`) as unknown as Batch;
  const step = computeStep(
    parent,
    net.objects,
    batch,
    partitions,
    opts.lr ?? LR,
    CLIP,
    l.training_round as number,
    opts.forge ?? null,
  );
  for (const [r, b] of step.objects) net.objects.set(r, b);
  const fields: JsonObject = {
    record_root: step.recordRoot,
    metadata: metadataFor(step, CHAIN, a.id as string, keys),
    workers: keys.map((k) => k.accountId),
    data_root: a.data_root as string,
    sequence_index: a.sequence_index as number,
  };
  return { claim: net.tx(sponsor, "claim", fields), step, fields };
}

/** Reserves and claims in two blocks; returns the claim id, its height and the step. */
export function reserveAndClaim(
  net: Net,
  opts: { forge?: Forge; partitions?: string[][]; keys?: readonly AccountKey[]; lr?: number } = {},
): { claimId: string; height: number; step: SyntheticStep; claim: Envelope; assignment: string } {
  const partitions = opts.partitions ?? TWO_STAGES;
  const r = reserveTx(net, opts.keys ?? workers.slice(0, partitions.length));
  net.ok(r);
  const c = claimFor(net, opts);
  const height = net.height;
  net.ok(c.claim);
  return { claimId: net.id(c.claim), height, step: c.step, claim: c.claim, assignment: net.id(r) };
}

/** The live challenge of the pending claim, as `/lifecycle` shows it. */
export function liveChallenge(net: Net): JsonObject {
  const claim = net.lifecycle().claim as { state: { claim: { challenge: JsonObject } } };
  return claim.state.claim.challenge;
}

/**
 * Whether the chunks of an object carry their Merkle paths in the live challenge of `claimId` (a training
 * claim's traces commit the object's chunk root and the challenge is not `chunks`), as the actors decide it.
 */
export function chunkTreeOf(net: Net, claimId: string): (root: string) => boolean {
  type Answer = { state: JsonObject; metadata: JsonObject };
  const answer = (() => {
    try {
      return net.app.query(`/claim?id=${claimId}`) as unknown as Answer | null;
    } catch {
      return null;
    }
  })();
  if (answer === null) return () => false; // not a training claim or growth (a response, a score)
  const phase = (answer.state as { claim?: { challenge?: { phase?: string | null } | null } }).claim
    ?.challenge?.phase ?? null;
  return answerChunkTree(answer, phase);
}

/** Uploads `root` from the test's objects in 1 MiB chunks and seals it, all in one block, by `publisher`. */
export function uploadAndSeal(net: Net, claimId: string, root: string, publisher: AccountKey): void {
  const bytes = net.objects.get(root)!;
  const chunks = uploadChunks(bytes), paths = uploadPaths(bytes, chunkTreeOf(net, claimId)(root));
  const txs = chunks.map((data, index) =>
    net.tx(
      publisher,
      "upload",
      { claim_id: claimId, object_root: root, index, data, path: paths[index]! },
      index,
    )
  );
  txs.push(net.tx(publisher, "seal", { claim_id: claimId, object_root: root }, chunks.length));
  net.ok(...txs);
}

/** Where a pinpointed fraud challenge points: a block of the stage (or `"head"`) and a phase. */
export type Pin = { block: number | "head"; phase: "forward" | "backward" | "update" };

/** A fraud challenge's body fields. */
export function fraudFields(claimId: string, stage: number, pin: Pin | null): JsonObject {
  return {
    claim_id: claimId,
    stage,
    challenge_kind: "fraud",
    object_root: null,
    block: pin?.block ?? null,
    phase: pin?.phase ?? null,
  };
}

/** A `chunks` challenge's body fields: stage `stage`'s committed chunk root of `object` is disputed. */
export function chunksFields(claimId: string, stage: number, object: string): JsonObject {
  return {
    claim_id: claimId,
    stage,
    challenge_kind: "fraud",
    object_root: object,
    block: null,
    phase: "chunks",
  };
}

/** `challenger` files an accepted fraud challenge on `stage` (at `pin`) of the claim; returns the objects it needs. */
export function fraudChallenge(
  net: Net,
  claimId: string,
  stage: number,
  challenger: AccountKey,
  pin: Pin | null = { block: 0, phase: "update" },
): string[] {
  net.ok(net.tx(challenger, "challenge", fraudFields(claimId, stage, pin)));
  return liveChallenge(net).needed as string[];
}

/** Files a fraud challenge of `stage` (at `pin`) by `challenger` and uploads and seals every needed object. */
export function challengeAndUpload(
  net: Net,
  claimId: string,
  stage: number,
  challenger: AccountKey,
  pin: Pin | null = { block: 0, phase: "update" },
): string[] {
  const needed = fraudChallenge(net, claimId, stage, challenger, pin);
  for (const root of needed) uploadAndSeal(net, claimId, root, challenger);
  return needed;
}

/** A grown manifest of the learning root with `added` identity blocks (`forge`: a tampered new block). */
export function grown(net: Net, added: number, forge = false): { manifest: Manifest; root: string } {
  const l = net.lifecycle();
  const parent = net.app.query(`/manifest?root=${l.learning_root}`) as unknown as Manifest;
  const n = configFromJson(parent.config as JsonValue).num_hidden_layers;
  const last = net.objects.get(parent.components[blockName(n - 1)]!)!;
  const g = growManifest(parent, l.learning_root as string, last, added);
  for (const [r, b] of g.objects) net.objects.set(r, b);
  if (!forge) return { manifest: g.manifest, root: g.root };
  const bad = tamper(g.objects.get(g.manifest.components.block_004!)!);
  net.objects.set(sha256Hex(bad), bad);
  const components = { ...g.manifest.components };
  for (let i = 0; i < added; i++) components[blockName(n + i)] = sha256Hex(bad);
  const manifest = { ...g.manifest, components };
  return { manifest, root: id(manifest as unknown as JsonValue) };
}

/** A `grow` by the sponsor of `g` from the learning root. */
export function growTx(net: Net, g: { manifest: Manifest; root: string }, capacities = [2_000_000]) {
  return net.tx(sponsor, "grow", {
    parent: net.lifecycle().learning_root as string,
    model_root: g.root,
    metadata: growMetadata(g.manifest),
    capacities,
  });
}
