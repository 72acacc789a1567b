/**
 * The claim phase shared by every lifecycle that "is a claim" (training steps, growths, evaluation scores,
 * inference responses): a bond, a challenge window, fraud and availability challenges, chunked uploads, seals,
 * the referee's verdict and the height deadlines of PROTOCOL §5. Private to `workflows/`: each machine maps
 * the outcomes below to its own states.
 */
import { isRoot } from "../core/hex.ts";
import { reject, type Rejection } from "../core/errors.ts";
import { MAX_UPLOAD_CHUNKS, UPLOAD_CHUNK_BYTES } from "../core/limits.ts";
import { burn, lock, type Move, nonZero, release, slashSplit } from "./money.ts";
import type { WorkflowParams } from "./params.ts";

/** What the referee may name as forged, in the order it compares (§10.5; a generation's head, §8.1; a score's head, §7). */
export const FORGED_PARTS = [
  "forward output",
  "head loss",
  "head gradient",
  "input gradient",
  "gradient norm",
  "optimizer update",
  "generated token",
  "window loss",
  "next-token argmax",
  "growth",
  "chunk root",
] as const;

/** What a training fraud challenge replays: a block's phase, or `chunks` (the committed chunk root of one object). */
export type ChallengePhase = "forward" | "backward" | "update" | "chunks";

/** One object being uploaded for a challenge: chunks so far and their total bytes. */
export type Upload = { readonly object_root: string; readonly chunks: number; readonly bytes: number };

/** A live challenge against a claim. */
export type Challenge = {
  readonly owner: string;
  readonly kind: "fraud" | "availability";
  readonly stage: number;
  /** A pinpointed fraud challenge's block (an index in the stage, or stage 0's `"head"`); else null. */
  readonly block: number | "head" | null;
  /** A pinpointed fraud challenge's phase, or `chunks` (a committed chunk root disputed); else null. */
  readonly phase: ChallengePhase | null;
  readonly object_root: string | null;
  readonly bond: number;
  /** Roots that must be sealed, sorted. */
  readonly needed: readonly string[];
  readonly uploads: readonly Upload[];
  /** Sealed roots, sorted. */
  readonly sealed: readonly string[];
  readonly deadline: number;
};

/** The claim part of a lifecycle state: who is bonded, the windows, and the live challenge if any. */
export type Claim = {
  readonly id: string;
  readonly owner: string;
  readonly bond: number;
  /** Stages that can be challenged: 0 … stages−1. */
  readonly stages: number;
  readonly deadline: number;
  readonly expires: number;
  readonly challenge: Challenge | null;
};

/** `challenge`: the ledger has checked the signature and computed `needed` from the claim's record. */
export type ChallengeEvent = {
  readonly type: "challenge";
  readonly sender: string;
  readonly kind: "fraud" | "availability";
  readonly stage: number;
  readonly block: number | "head" | null;
  readonly phase: ChallengePhase | null;
  readonly object_root: string | null;
  readonly needed: readonly string[];
};
/** `upload`: one chunk; the ledger has decoded the base64 and passes its size in bytes. */
export type UploadEvent = {
  readonly type: "upload";
  readonly sender: string;
  readonly object_root: string;
  readonly index: number;
  readonly size: number;
};
/** `seal`: the ledger passes the sha256 of the concatenated chunks as `digest`. */
export type SealEvent = {
  readonly type: "seal";
  readonly sender: string;
  readonly object_root: string;
  readonly digest: string;
};
/** The referee's verdict, computed by the validators on the sealed bytes (§10.5). */
export type Verdict = { readonly verdict: "match" } | {
  readonly verdict: "mismatch";
  readonly what: typeof FORGED_PARTS[number];
};
/** `resolve`: carries the verdict the ledger obtained from the referee. */
export type ResolveEvent = { readonly type: "resolve"; readonly sender: string } & Verdict;
/** A block boundary at `env.height`: deadlines compare with `H > deadline`. */
export type TickEvent = { readonly type: "tick" };

/** Every event of the claim phase. */
export type ClaimEvent = ChallengeEvent | UploadEvent | SealEvent | ResolveEvent | TickEvent;

/** The status of a live claim, derived from its challenge. */
export type LiveStatus = "claimed" | "challenged" | "uploading" | "resolving";

/** The outcome of a claim-phase step. `moves` are the movements it causes, in order. */
export type ClaimResult =
  | { readonly ok: true; readonly outcome: "live"; readonly claim: Claim; readonly moves: Move[] }
  | { readonly ok: true; readonly outcome: "accepted"; readonly claim: Claim; readonly moves: Move[] }
  | {
    readonly ok: true;
    readonly outcome: "rejected";
    readonly claim: Claim;
    readonly reason: string;
    readonly moves: Move[];
  }
  | { readonly ok: true; readonly outcome: "expired"; readonly claim: Claim; readonly moves: Move[] }
  | Rejection;

/** The edges of the claim phase, for a machine whose accepted, rejected and expired states are named. */
export function claimEdges<T extends string>(
  names: { accepted: T; rejected: T; expired: T },
): { from: LiveStatus | T; event: ClaimEvent["type"]; to: LiveStatus | T }[] {
  const e = (from: LiveStatus, event: ClaimEvent["type"], to: LiveStatus | T) => ({ from, event, to });
  return [
    e("claimed", "challenge", "challenged"),
    e("claimed", "tick", names.accepted),
    e("claimed", "tick", names.expired),
    e("challenged", "upload", "uploading"),
    e("challenged", "tick", "claimed"),
    e("challenged", "tick", names.rejected),
    e("challenged", "tick", names.expired),
    e("uploading", "upload", "uploading"),
    e("uploading", "seal", "uploading"),
    e("uploading", "seal", "resolving"),
    e("uploading", "seal", "claimed"),
    e("uploading", "tick", "claimed"),
    e("uploading", "tick", names.rejected),
    e("uploading", "tick", names.expired),
    e("resolving", "resolve", "claimed"),
    e("resolving", "resolve", names.rejected),
    e("resolving", "tick", "claimed"),
    e("resolving", "tick", names.expired),
  ];
}

/** A new claim with its challenge window open from height `h`. */
export function openClaim(
  fields: { id: string; owner: string; bond: number; stages: number; expires: number },
  h: number,
  p: WorkflowParams,
): Claim {
  return { ...fields, deadline: h + p.challenge_blocks, challenge: null };
}

/** The live status a claim is in. */
export function liveStatus(claim: Claim): LiveStatus {
  const c = claim.challenge;
  if (c === null) return "claimed";
  if (c.kind === "fraud" && c.sealed.length === c.needed.length) return "resolving";
  return c.uploads.length > 0 ? "uploading" : "challenged";
}

/** Applies a claim-phase event to a live claim at height `h`. */
export function stepClaim(claim: Claim, event: ClaimEvent, h: number, p: WorkflowParams): ClaimResult {
  switch (event.type) {
    case "challenge":
      return challenge(claim, event, h, p);
    case "upload":
      return upload(claim, event, h);
    case "seal":
      return seal(claim, event, h, p);
    case "resolve":
      return resolve(claim, event, h, p);
    case "tick":
      return tick(claim, h, p);
  }
}

function challenge(claim: Claim, ev: ChallengeEvent, h: number, p: WorkflowParams): ClaimResult {
  if (claim.challenge !== null) {
    return reject(
      "invalid_transition",
      `Cannot challenge claim ${claim.id}: a challenge by ${claim.challenge.owner} is live`,
    );
  }
  if (h > claim.deadline || h > claim.expires) {
    return reject(
      "expired",
      `Cannot challenge claim ${claim.id}: height is ${h}, window closed at ${claim.deadline}`,
    );
  }
  if (!Number.isSafeInteger(ev.stage) || ev.stage < 0 || ev.stage >= claim.stages) {
    return reject(
      "invalid_challenge",
      `Cannot challenge claim ${claim.id}: stage is ${ev.stage}, expected 0-${claim.stages - 1}`,
    );
  }
  if (ev.kind === "fraud") {
    // A `chunks` challenge names the one object whose committed chunk root it disputes; others name none.
    const chunks = ev.phase === "chunks";
    if (
      chunks
        ? !isRoot(ev.object_root) || ev.needed.length !== 1 || ev.needed[0] !== ev.object_root
        : ev.object_root !== null
    ) {
      return reject(
        "invalid_challenge",
        `Cannot challenge claim ${claim.id}: a ${
          chunks ? "chunks" : "fraud"
        } challenge names object ${ev.object_root}`,
      );
    }
    const sortedUnique = ev.needed.every((r, i) => isRoot(r) && (i === 0 || ev.needed[i - 1]! < r));
    if (ev.needed.length === 0 || !sortedUnique) {
      return reject(
        "invalid_challenge",
        `Cannot challenge claim ${claim.id}: needed roots are not sorted, unique roots`,
      );
    }
  } else if (ev.kind === "availability") {
    if (!isRoot(ev.object_root) || ev.needed.length !== 1 || ev.needed[0] !== ev.object_root) {
      return reject(
        "invalid_challenge",
        `Cannot challenge claim ${claim.id}: availability object is ${ev.object_root}, needed is [${
          ev.needed.join(",")
        }]`,
      );
    }
  } else {
    return reject("invalid_challenge", `Cannot challenge claim ${claim.id}: kind is ${String(ev.kind)}`);
  }
  const c: Challenge = {
    owner: ev.sender,
    kind: ev.kind,
    stage: ev.stage,
    block: ev.block,
    phase: ev.phase,
    object_root: ev.object_root,
    bond: p.challenge_bond,
    needed: [...ev.needed],
    uploads: [],
    sealed: [],
    deadline: h + p.availability_blocks,
  };
  return live({ ...claim, challenge: c }, [lock(ev.sender, p.challenge_bond)]);
}

function publisherCheck(
  claim: Claim,
  sender: string,
  object: string,
  h: number,
  what: string,
): Rejection | Challenge {
  const c = claim.challenge;
  if (c === null) {
    return reject("invalid_transition", `Cannot ${what} for claim ${claim.id}: no challenge is live`);
  }
  if (h > c.deadline) {
    return reject("expired", `Cannot ${what} for claim ${claim.id}: height is ${h}, deadline ${c.deadline}`);
  }
  const publisher = c.kind === "availability" ? claim.owner : c.owner;
  if (sender !== publisher) {
    return reject(
      "not_owner",
      `Cannot ${what} for claim ${claim.id}: sender is ${sender}, publisher is ${publisher}`,
    );
  }
  if (!c.needed.includes(object) || c.sealed.includes(object)) {
    return reject(
      "invalid_upload",
      `Cannot ${what} for claim ${claim.id}: object ${object} is not needed or already sealed`,
    );
  }
  return c;
}

function upload(claim: Claim, ev: UploadEvent, h: number): ClaimResult {
  const c = publisherCheck(claim, ev.sender, ev.object_root, h, "upload");
  if ("ok" in c) return c;
  const prev = c.uploads.find((u) => u.object_root === ev.object_root) ??
    { object_root: ev.object_root, chunks: 0, bytes: 0 };
  if (ev.index !== prev.chunks || ev.index >= MAX_UPLOAD_CHUNKS) {
    return reject(
      "invalid_upload",
      `Cannot upload chunk for claim ${claim.id}: index is ${ev.index}, expected ${prev.chunks}`,
    );
  }
  if (prev.bytes !== prev.chunks * UPLOAD_CHUNK_BYTES) {
    return reject(
      "invalid_upload",
      `Cannot upload chunk for claim ${claim.id}: the previous chunk is ${
        prev.bytes % UPLOAD_CHUNK_BYTES
      } bytes, not 1 MiB`,
    );
  }
  if (!Number.isSafeInteger(ev.size) || ev.size < 1 || ev.size > UPLOAD_CHUNK_BYTES) {
    return reject(
      "invalid_upload",
      `Cannot upload chunk for claim ${claim.id}: size is ${ev.size} bytes, expected 1-${UPLOAD_CHUNK_BYTES}`,
    );
  }
  const next: Upload = { object_root: ev.object_root, chunks: prev.chunks + 1, bytes: prev.bytes + ev.size };
  const uploads = [...c.uploads.filter((u) => u.object_root !== ev.object_root), next]
    .sort((a, b) => (a.object_root < b.object_root ? -1 : 1));
  return live({ ...claim, challenge: { ...c, uploads } }, []);
}

function seal(claim: Claim, ev: SealEvent, h: number, p: WorkflowParams): ClaimResult {
  const c = publisherCheck(claim, ev.sender, ev.object_root, h, "seal");
  if ("ok" in c) return c;
  if (!c.uploads.some((u) => u.object_root === ev.object_root)) {
    return reject(
      "invalid_upload",
      `Cannot seal object ${ev.object_root} for claim ${claim.id}: no chunk was uploaded`,
    );
  }
  if (ev.digest !== ev.object_root) {
    return reject(
      "seal_mismatch",
      `Cannot seal object ${ev.object_root} for claim ${claim.id}: chunks hash to ${ev.digest}`,
    );
  }
  const sealed = [...c.sealed, ev.object_root].sort();
  if (c.kind === "availability" && sealed.length === c.needed.length) {
    // Answered: the challenger is refunded and the window reopens.
    return live({ ...claim, challenge: null, deadline: h + p.challenge_blocks }, [release(c.owner, c.bond)]);
  }
  return live({ ...claim, challenge: { ...c, sealed } }, []);
}

function resolve(claim: Claim, ev: ResolveEvent, h: number, p: WorkflowParams): ClaimResult {
  const c = claim.challenge;
  if (c === null || c.kind !== "fraud") {
    return reject("invalid_transition", `Cannot resolve claim ${claim.id}: no fraud challenge is live`);
  }
  if (c.sealed.length !== c.needed.length) {
    return reject(
      "not_sealed",
      `Cannot resolve claim ${claim.id}: ${c.sealed.length} of ${c.needed.length} objects sealed`,
    );
  }
  if (h > c.deadline) {
    return reject("expired", `Cannot resolve claim ${claim.id}: height is ${h}, deadline ${c.deadline}`);
  }
  if (ev.verdict === "match") {
    return live({ ...claim, challenge: null, deadline: h + p.challenge_blocks }, [burn(c.bond)]);
  }
  if (ev.verdict !== "mismatch" || !FORGED_PARTS.includes(ev.what)) {
    return reject("bad_request", `Cannot resolve claim ${claim.id}: verdict is ${JSON.stringify(ev)}`);
  }
  return slash(claim, c, `mismatch: ${ev.what}`);
}

function tick(claim: Claim, h: number, p: WorkflowParams): ClaimResult {
  const c = claim.challenge;
  if (h > claim.expires) {
    const moves = nonZero([release(claim.owner, claim.bond), ...(c === null ? [] : [burn(c.bond)])]);
    return { ok: true, outcome: "expired", claim: { ...claim, challenge: null }, moves };
  }
  if (c !== null && h > c.deadline) {
    if (c.kind === "availability") return slash(claim, c, "availability challenge unanswered");
    return live({ ...claim, challenge: null, deadline: h + p.challenge_blocks }, [burn(c.bond)]);
  }
  if (c === null && h > claim.deadline) {
    return { ok: true, outcome: "accepted", claim, moves: nonZero([release(claim.owner, claim.bond)]) };
  }
  const due = c === null ? claim.deadline : Math.min(c.deadline, claim.expires);
  return reject(
    "invalid_transition",
    `Cannot tick claim ${claim.id}: nothing is due at height ${h}, next after ${due}`,
  );
}

function slash(claim: Claim, c: Challenge, reason: string): ClaimResult {
  const split = slashSplit(claim.bond);
  const moves = nonZero([release(c.owner, c.bond), release(c.owner, split.challenger), burn(split.burned)]);
  return { ok: true, outcome: "rejected", claim: { ...claim, challenge: c }, reason, moves };
}

function live(claim: Claim, moves: Move[]): ClaimResult {
  return { ok: true, outcome: "live", claim, moves: nonZero(moves) };
}

/** The next height at which a tick changes this claim: the first height past its earliest deadline. */
export function claimDueAt(claim: Claim): number {
  const c = claim.challenge;
  const first = c === null ? Math.min(claim.deadline, claim.expires) : Math.min(c.deadline, claim.expires);
  return first + 1;
}
