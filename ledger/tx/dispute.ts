/**
 * `challenge`, `upload`, `seal` and `resolve` against a pending claim: the live training step or growth
 * (PROTOCOL §5), a pending inference response (§8) or a pending score claim (§7), found by
 * `dispute_target.ts`. The handlers compute what
 * the claim machine cannot (the objects needed, the chunk's decoded size, the digest of the uploaded chunks,
 * the referee's verdict on the sealed bytes), then feed the claim's lifecycle machine and apply its moves.
 * Chunks are kept in ledger state; a sealed object's bytes stay there and are served by `GET /object/<root>`.
 * A referee that crashes or runs out of memory rejects the `resolve` with `referee_error` and decides nothing.
 * The verdict of a training stage may have been computed ahead in a worker thread (`verdict_ahead.ts`).
 */
import { sha256Stream } from "../../core/digest.ts";
import { reject } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { MAX_OBJECT_BYTES } from "../../core/limits.ts";
import { trainingWriter } from "../training/store.ts";
import { decodeBase64Strict, TRAINING_TX_FIELDS } from "../training/wire.ts";
import { verdictKey, verdictsAhead } from "../training/verdict_ahead.ts";
import { type DisputeTarget, disputeTarget } from "./dispute_target.ts";
import type { HandlerResult, TxContext } from "./context.ts";
import { CHUNK_TREE_DEPTH, isChunkPath, verifyChunk } from "../../core/chunk_tree.ts";
import type { TrainingKind } from "./training.ts";
import type { ChallengePhase } from "../../workflows/_claim.ts";

/** The `challenge` kind. */
export const challenge: TrainingKind = {
  fields: TRAINING_TX_FIELDS.challenge,
  handle(ctx) {
    const { body } = ctx;
    const d = disputeTarget(ctx.state, body.claim_id, ctx.env, "challenge");
    if ("ok" in d) return d;
    const kind = body.challenge_kind;
    if (kind !== "fraud" && kind !== "availability") {
      return reject("invalid_challenge", `Cannot challenge: challenge_kind is ${JSON.stringify(kind)}`);
    }
    const stage = body.stage as number;
    const valid = Number.isSafeInteger(stage) && stage >= 0 && stage < d.claim.stages;
    if (kind === "fraud" && body.phase === "chunks") return chunksChallenge(ctx, d, stage, valid);
    const pinned = body.block !== null || body.phase !== null;
    // A training fraud challenge names its block and phase; every other challenge names neither.
    if (kind === "fraud" && d.pinpointed ? !pinned : pinned) {
      return reject(
        "invalid_challenge",
        `Cannot challenge: block is ${JSON.stringify(body.block)} and phase ${
          JSON.stringify(body.phase)
        }, expected ${
          kind === "fraud" && d.pinpointed ? "a block of the stage and a phase" : "null and null"
        }`,
      );
    }
    let needed: string[] = [];
    if (kind === "fraud" && valid && body.object_root === null) {
      const n = d.fraudNeeded(stage, body.block, body.phase);
      if (n === null) {
        return reject(
          "invalid_challenge",
          `Cannot challenge: block ${JSON.stringify(body.block)} phase ${
            JSON.stringify(body.phase)
          } is not a block and phase of stage ${stage}`,
        );
      }
      needed = n;
    }
    if (kind === "availability" && isRoot(body.object_root) && d.objects().has(body.object_root)) {
      needed = [body.object_root];
    }
    return d.advance({
      type: "challenge",
      sender: ctx.sender,
      kind,
      stage,
      block: body.block as number | "head" | null,
      phase: body.phase as ChallengePhase | null,
      object_root: (body.object_root ?? null) as string | null,
      needed,
    });
  },
};

/**
 * A `chunks` challenge (PROTOCOL §5): a training claim's stage committed a chunk root for `object_root` that
 * is not the tree of its bytes. It names no block; the object alone is needed, uploaded without paths.
 */
function chunksChallenge(ctx: TxContext, d: DisputeTarget, stage: number, valid: boolean): HandlerResult {
  const { body } = ctx;
  const root = body.object_root;
  const committed = valid && d.pinpointed && isRoot(root) ? d.chunkRootOf(root, stage) : null;
  if (body.block !== null || committed === null) {
    return reject(
      "invalid_challenge",
      `Cannot challenge: a chunks challenge names block ${JSON.stringify(body.block)} and object ${
        JSON.stringify(root)
      }, expected null and an object whose chunk root stage ${stage} commits`,
    );
  }
  return d.advance({
    type: "challenge",
    sender: ctx.sender,
    kind: "fraud",
    stage,
    block: null,
    phase: "chunks",
    object_root: root as string,
    needed: [root as string],
  });
}

/**
 * Why an upload's `path` is refused, or null (PROTOCOL §5 "Chunk trees"): where the claim commits the object's
 * chunk root (and the challenge is not `chunks`) the chunk must hash to it along its 8-root path; elsewhere
 * the path is `[]`.
 */
function pathRejection(d: DisputeTarget, root: string, index: number, chunk: Uint8Array, path: unknown) {
  const c = d.claim.challenge;
  const tree = c !== null && c.phase !== "chunks" ? d.chunkRootOf(root) : null;
  if (tree === null) {
    if (Array.isArray(path) && path.length === 0) return null;
    return reject(
      "invalid_upload",
      `Cannot upload chunk ${index} of ${root}: path has ${
        Array.isArray(path) ? path.length : "no"
      } entries, expected none (no chunk root is committed for it)`,
    );
  }
  if (!isChunkPath(path)) {
    return reject(
      "invalid_upload",
      `Cannot upload chunk ${index} of ${root}: path is not ${CHUNK_TREE_DEPTH} roots`,
    );
  }
  if (!verifyChunk(chunk, index, path, tree)) {
    return reject(
      "chunk_mismatch",
      `Cannot upload chunk ${index} of ${root}: along its path it makes a tree other than the committed ${tree}`,
    );
  }
  return null;
}

/** The `upload` kind. */
export const upload: TrainingKind = {
  fields: TRAINING_TX_FIELDS.upload,
  handle(ctx) {
    const { body } = ctx;
    const d = disputeTarget(ctx.state, body.claim_id, ctx.env, "upload");
    if ("ok" in d) return d;
    if (!isRoot(body.object_root)) {
      return reject("invalid_upload", "Cannot upload: object_root is not a root");
    }
    const bytes = decodeBase64Strict(body.data);
    // Malformed data counts as size 0, which the machine refuses after its publisher and order checks.
    const r = d.advance({
      type: "upload",
      sender: ctx.sender,
      object_root: body.object_root,
      index: body.index as number,
      size: bytes?.length ?? 0,
    });
    if (!r.ok) return r;
    // After the machine's checks (publisher, order, size), so those keep their codes; a refusal here drops
    // the transaction's writes with it (`executeTx` applies a rejected transaction's state not at all).
    const bad = pathRejection(d, body.object_root, body.index as number, bytes!, body.path);
    if (bad) return bad;
    trainingWriter(ctx.state).setUploadChunk(
      d.claimId,
      body.object_root,
      body.index as number,
      body.data as string,
    );
    return r;
  },
};

/** The `seal` kind. */
export const seal: TrainingKind = {
  fields: TRAINING_TX_FIELDS.seal,
  handle(ctx) {
    const d = disputeTarget(ctx.state, ctx.body.claim_id, ctx.env, "seal");
    if ("ok" in d) return d;
    const root = ctx.body.object_root;
    if (!isRoot(root)) return reject("invalid_upload", "Cannot seal: object_root is not a root");
    const t = trainingWriter(ctx.state);
    const up = d.claim.challenge?.uploads.find((u) => u.object_root === root);
    const chunks: string[] = [];
    let digest = "";
    if (up) {
      if (up.bytes > MAX_OBJECT_BYTES) {
        return reject(
          "too_large",
          `Cannot seal object ${root}: ${up.bytes} bytes, at most ${MAX_OBJECT_BYTES}`,
        );
      }
      const h = sha256Stream();
      for (let i = 0; i < up.chunks; i++) {
        const c = t.uploadChunk(d.claimId, root, i)!;
        chunks.push(c);
        h.update(Uint8Array.fromBase64(c));
      }
      digest = h.hex();
    }
    const r = d.advance({ type: "seal", sender: ctx.sender, object_root: root, digest });
    if (!r.ok) return r;
    t.setSealed(root, chunks, up!.bytes);
    chunks.forEach((_, i) => t.setUploadChunk(d.claimId, root, i, null));
    return r;
  },
};

/** The `resolve` kind: the validators run the referee on the sealed bytes. */
export const resolve: TrainingKind = {
  fields: TRAINING_TX_FIELDS.resolve,
  handle(ctx) {
    const d = disputeTarget(ctx.state, ctx.body.claim_id, ctx.env, "resolve");
    if ("ok" in d) return d;
    // Every check of the machine first (fraud challenge, all sealed, deadline), before any neural work.
    const dry = d.dryResolve(ctx.sender);
    if (!dry.ok) return dry;
    // A verdict computed ahead off the block thread (`verdict_ahead.ts`) is the same function of the same bytes.
    const c = d.claim.challenge!;
    const v = verdictsAhead.take(verdictKey(d.claimId, c)) ?? d.verdict(c);
    if (v.verdict === "error") {
      return reject(
        "referee_error",
        `Cannot resolve claim ${d.claimId}: the referee failed (${v.message})`,
      );
    }
    const event = v.verdict === "match"
      ? { type: "resolve" as const, sender: ctx.sender, verdict: "match" as const }
      : { type: "resolve" as const, sender: ctx.sender, verdict: "mismatch" as const, what: v.what };
    return d.advance(event);
  },
};
