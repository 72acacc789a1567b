/**
 * `challenge`, `upload`, `seal` and `resolve` against the pending claim (a training step or a growth,
 * PROTOCOL §5). The handlers compute what the claim machine cannot (the objects needed, the chunk's decoded
 * size, the digest of the uploaded chunks, the referee's verdict on the sealed bytes), then feed the machine
 * and apply its moves. Chunks are kept in ledger state; a sealed object's bytes stay there and are served by
 * `GET /object/<root>`. A referee that crashes or runs out of memory rejects the `resolve` with
 * `referee_error` and decides nothing.
 */
import { Buffer } from "node:buffer";
import { sha256Stream } from "../../core/digest.ts";
import { reject, type Rejection } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { MAX_OBJECT_BYTES } from "../../core/limits.ts";
import { growth } from "../../workflows/growth.ts";
import { training } from "../../workflows/training.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import { advanceJob } from "../training/advance.ts";
import { disputeObjects, fraudNeeded, refereeVerdict } from "../training/dispute.ts";
import { type Job, type TrainingWriter, trainingWriter } from "../training/store.ts";
import { decodeBase64Strict, TRAINING_TX_FIELDS } from "../training/wire.ts";
import type { TxContext } from "./context.ts";
import { lifecycleOf, type TrainingKind } from "./training.ts";

const LIVE = new Set(["claimed", "challenged", "uploading", "resolving"]);

function pending(t: TrainingWriter, claimId: unknown, what: string): Job | Rejection {
  const l = lifecycleOf(t, what);
  if ("ok" in l) return l;
  const job = l.job === null ? null : t.job(l.job);
  if (!job || job.claim_id !== claimId || !LIVE.has(job.state.status)) {
    return reject("invalid_transition", `Cannot ${what}: claim ${String(claimId)} is not pending`);
  }
  return job;
}

function challengeOf(job: Job): Challenge | null {
  const s = job.state;
  return "claim" in s && s.claim ? s.claim.challenge : null;
}

function open(ctx: TxContext, what: string): { t: TrainingWriter; job: Job } | Rejection {
  const t = trainingWriter(ctx.state);
  const job = pending(t, ctx.body.claim_id, what);
  return "ok" in job ? job : { t, job };
}

/** The `challenge` kind. */
export const challenge: TrainingKind = {
  fields: TRAINING_TX_FIELDS.challenge,
  handle(ctx) {
    const o = open(ctx, "challenge");
    if ("ok" in o) return o;
    const { body } = ctx;
    const kind = body.challenge_kind;
    if (kind !== "fraud" && kind !== "availability") {
      return reject("invalid_challenge", `Cannot challenge: challenge_kind is ${JSON.stringify(kind)}`);
    }
    const stage = body.stage as number;
    const s = o.job.state;
    const stages = "claim" in s && s.claim ? s.claim.stages : 0;
    const valid = Number.isSafeInteger(stage) && stage >= 0 && stage < stages;
    let needed: string[] = [];
    if (kind === "fraud" && valid && body.object_root === null) needed = fraudNeeded(o.t, o.job, stage);
    if (
      kind === "availability" && isRoot(body.object_root) && disputeObjects(o.t, o.job).has(body.object_root)
    ) {
      needed = [body.object_root];
    }
    return advanceJob(ctx.state, o.job, {
      type: "challenge",
      sender: ctx.sender,
      kind,
      stage,
      object_root: (body.object_root ?? null) as string | null,
      needed,
    }, ctx.env);
  },
};

/** The `upload` kind. */
export const upload: TrainingKind = {
  fields: TRAINING_TX_FIELDS.upload,
  handle(ctx) {
    const o = open(ctx, "upload");
    if ("ok" in o) return o;
    const { body } = ctx;
    if (!isRoot(body.object_root)) {
      return reject("invalid_upload", "Cannot upload: object_root is not a root");
    }
    const bytes = decodeBase64Strict(body.data);
    // Malformed data counts as size 0, which the machine refuses after its publisher and order checks.
    const r = advanceJob(ctx.state, o.job, {
      type: "upload",
      sender: ctx.sender,
      object_root: body.object_root,
      index: body.index as number,
      size: bytes?.length ?? 0,
    }, ctx.env);
    if (!r.ok) return r;
    o.t.setUploadChunk(o.job.claim_id!, body.object_root, body.index as number, body.data as string);
    return r;
  },
};

/** The `seal` kind. */
export const seal: TrainingKind = {
  fields: TRAINING_TX_FIELDS.seal,
  handle(ctx) {
    const o = open(ctx, "seal");
    if ("ok" in o) return o;
    const root = ctx.body.object_root;
    if (!isRoot(root)) return reject("invalid_upload", "Cannot seal: object_root is not a root");
    const up = challengeOf(o.job)?.uploads.find((u) => u.object_root === root);
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
        const c = o.t.uploadChunk(o.job.claim_id!, root, i)!;
        chunks.push(c);
        h.update(new Uint8Array(Buffer.from(c, "base64")));
      }
      digest = h.hex();
    }
    const r = advanceJob(ctx.state, o.job, {
      type: "seal",
      sender: ctx.sender,
      object_root: root,
      digest,
    }, ctx.env);
    if (!r.ok) return r;
    o.t.setSealed(root, chunks, up!.bytes);
    chunks.forEach((_, i) => o.t.setUploadChunk(o.job.claim_id!, root, i, null));
    return r;
  },
};

/** The `resolve` kind: the validators run the referee on the sealed bytes. */
export const resolve: TrainingKind = {
  fields: TRAINING_TX_FIELDS.resolve,
  handle(ctx) {
    const o = open(ctx, "resolve");
    if ("ok" in o) return o;
    // Every check of the machine first (fraud challenge, all sealed, deadline), before any neural work.
    const dry = o.job.kind === "training"
      ? training.apply(o.job.state, { type: "resolve", sender: ctx.sender, verdict: "match" }, ctx.env)
      : growth.apply(o.job.state, { type: "resolve", sender: ctx.sender, verdict: "match" }, ctx.env);
    if (!dry.ok) return dry;
    const v = refereeVerdict(o.t, o.job, challengeOf(o.job)!);
    if (v.verdict === "error") {
      return reject(
        "referee_error",
        `Cannot resolve claim ${o.job.claim_id}: the referee failed (${v.message})`,
      );
    }
    const event = v.verdict === "match"
      ? { type: "resolve" as const, sender: ctx.sender, verdict: "match" as const }
      : { type: "resolve" as const, sender: ctx.sender, verdict: "mismatch" as const, what: v.what };
    return advanceJob(ctx.state, o.job, event, ctx.env);
  },
};
