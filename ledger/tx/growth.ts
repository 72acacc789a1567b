/**
 * `grow {parent, model_root, metadata, capacities}` (PROTOCOL §5.3): a claim that the learning model gains
 * 1-16 identity blocks. The ledger checks structurally that the grown manifest is the parent plus `added`
 * blocks sharing one new root, with the config, origin and tokenizer kept, `parent` set and
 * `growth: {added, from_layers}` recorded; that the grown model can be placed on `capacities`; the period's
 * growth budget; and when (`ledger/data/schedule.ts`): only before the first step of an active cohort, or, on
 * a chain whose genesis lists training batches instead of a data lifecycle, at the start of a pass over them
 * (training round mod n = 0). Whether the new block really is the identity copy of the parent's last block is what a challenge
 * decides (the referee needs only that block). Accepted, it mints nothing and keeps the training round.
 */
import { isObject, type JsonObject, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError, reject } from "../../core/errors.ts";
import { MAX_WORKERS } from "../../core/limits.ts";
import { configFromJson } from "../../kernels/config.ts";
import { buildManifest, type Manifest, parseManifest } from "../../kernels/manifest.ts";
import { blockName } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { grow as growMachine, MAX_GROWTH_BLOCKS } from "../../workflows/growth.ts";
import { growthRule } from "../data/schedule.ts";
import { checkKeyedMetadata } from "../training/claim_check.ts";
import { applyMoves } from "../training/moves.ts";
import { periodAt, trainingWriter } from "../training/store.ts";
import { TRAINING_TX_FIELDS } from "../training/wire.ts";
import { lifecycleOf, type TrainingKind } from "./training.ts";

function checkGrown(parent: Manifest, parentRoot: string, grown: Manifest): number | string {
  const pc = configFromJson(parent.config as JsonValue);
  const gc = configFromJson(grown.config as JsonValue);
  const n = pc.num_hidden_layers, added = gc.num_hidden_layers - n;
  if (added < 1 || added > MAX_GROWTH_BLOCKS) return `${added} blocks added, expected 1-${MAX_GROWTH_BLOCKS}`;
  const fresh = grown.components[blockName(n)];
  const roots: Record<string, string> = { ...parent.components };
  for (let i = 0; i < added; i++) roots[blockName(n + i)] = fresh!;
  const want = buildManifest({ ...pc, num_hidden_layers: n + added }, roots, {
    parent: parentRoot,
    origin: parent.origin,
    tokenizer_root: parent.tokenizer_root,
    growth: { added, from_layers: n },
  });
  if (id(want as unknown as JsonValue) !== id(grown as unknown as JsonValue)) {
    return "the manifest is not the parent with identity blocks appended";
  }
  return added;
}

/** The `grow` kind. */
export const grow: TrainingKind = {
  fields: TRAINING_TX_FIELDS.grow,
  handle(ctx, txid) {
    const { state, env, body, sender } = ctx;
    const t = trainingWriter(state);
    const l = lifecycleOf(t, "grow");
    if ("ok" in l) return l;
    if (l.job !== null) return reject("busy", `Cannot grow: job ${l.job} is live`);
    const rule = growthRule(state, l, env.height);
    if (rule) return rule;
    const period = periodAt(l, env.height, env.params.period_blocks);
    if (period.growths >= env.params.growths_per_period) {
      return reject(
        "budget_exhausted",
        `Cannot grow: ${period.growths} growths in period ${period.index}, at most ${env.params.growths_per_period}`,
      );
    }
    if (body.parent !== l.learning_root) {
      return reject(
        "wrong_parent",
        `Cannot grow: parent is ${body.parent}, learning root is ${l.learning_root}`,
      );
    }
    const keyed = checkKeyedMetadata(body.metadata, "grow");
    if (keyed) return keyed;
    const metadata = body.metadata as JsonObject;
    const keys = Object.keys(metadata);
    if (keys.length !== 1 || keys[0] !== body.model_root || !isObject(metadata[keys[0]!])) {
      return reject(
        "invalid_model",
        "Cannot grow: metadata must hold exactly the grown manifest under model_root",
      );
    }
    const parent = t.manifest(l.learning_root)!;
    let grown: Manifest, added: number | string;
    try {
      grown = parseManifest(metadata[body.model_root as string]!).manifest;
      added = checkGrown(parent, l.learning_root, grown);
    } catch (e) {
      return reject("invalid_model", `Cannot grow: ${(e as Error).message}`);
    }
    if (typeof added === "string") return reject("invalid_model", `Cannot grow: ${added}`);
    const caps = body.capacities;
    if (!Array.isArray(caps) || caps.length < 1 || caps.length > MAX_WORKERS) {
      return reject("placement_failed", `Cannot grow: capacities must list 1-${MAX_WORKERS} workers`);
    }
    try {
      place(configFromJson(grown.config as JsonValue), caps as number[]);
    } catch (e) {
      if (e instanceof ProtocolError) return reject(e.code, `Cannot grow: ${e.message}`);
      throw e;
    }
    const step = growMachine({
      id: txid,
      owner: sender,
      parent: l.learning_root,
      model_root: body.model_root as string,
      metadata_root: id(metadata),
      added_blocks: added,
    }, env);
    if (!step.ok) return step;
    const moved = applyMoves(state, step.state.moves, 0, env.height);
    if (!moved.ok) return moved;
    t.setJob({
      kind: "growth",
      id: txid,
      claim_id: txid,
      parent: l.learning_root,
      escrow: moved.escrow,
      metadata,
      state: step.state,
    });
    t.setClaimJob(txid, txid);
    t.setManifest(body.model_root as string, grown);
    t.setLifecycle({ ...l, period, job: txid });
    return { ok: true };
  },
};
