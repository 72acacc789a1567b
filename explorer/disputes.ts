/**
 * Disputes of a claim, derived from the committed transactions that followed it: each accepted `challenge`
 * opens one; the accepted `upload`, `seal` and `resolve` after it belong to it. The verdict and slash come from
 * the claim's ledger state (`rejected` with its reason and the slash split of its bond).
 */
import { slashSplit } from "../workflows/money.ts";
import type { ClaimEntry } from "./chain_index.ts";
import type { ClaimState } from "./claim_states.ts";

/** One challenge against a claim and what came of it. */
export interface Dispute {
  readonly claim_id: string;
  readonly challenger: string;
  readonly challenge_kind: string;
  readonly stage: number | null;
  readonly challenge_hash: string;
  readonly challenge_height: number;
  readonly chunks: number;
  readonly bytes: number;
  readonly sealed: number;
  readonly resolve_height: number | null;
  /** Height of the last accepted transaction of this dispute. */
  readonly last_height: number;
  /** Blocks from the challenge to its last transaction. */
  readonly blocks: number;
  /** `open`, `mismatch: <part>`, `match`, `answered`, or what the claim ended as. */
  readonly verdict: string;
  /** The claim bond split when this dispute rejected the claim. */
  readonly slash: { readonly bond: number; readonly challenger: number; readonly burned: number } | null;
}

/** The disputes of one claim, oldest first. */
export function disputesOf(claim: ClaimEntry, state: ClaimState | null): Dispute[] {
  const out: Dispute[] = [];
  type Open = { -readonly [K in keyof Dispute]: Dispute[K] };
  let cur: Open | null = null;
  for (const e of claim.events) {
    if (!e.ok) continue;
    if (e.kind === "challenge") {
      if (cur) out.push(cur);
      cur = {
        claim_id: claim.claim_id,
        challenger: e.sender,
        challenge_kind: e.challenge_kind ?? "?",
        stage: e.stage,
        challenge_hash: e.hash,
        challenge_height: e.height,
        chunks: 0,
        bytes: 0,
        sealed: 0,
        resolve_height: null,
        last_height: e.height,
        blocks: 0,
        verdict: "open",
        slash: null,
      };
      continue;
    }
    if (!cur) continue;
    cur.last_height = e.height;
    cur.blocks = e.height - cur.challenge_height;
    if (e.kind === "upload") {
      cur.chunks++;
      cur.bytes += e.bytes ?? 0;
    } else if (e.kind === "seal") cur.sealed++;
    else if (e.kind === "resolve") cur.resolve_height = e.height;
  }
  if (cur) out.push(cur);
  out.forEach((d, i) => {
    const last = i === out.length - 1;
    const m = d as { -readonly [K in keyof Dispute]: Dispute[K] };
    if (!last) {
      m.verdict = d.resolve_height !== null
        ? "match"
        : d.challenge_kind === "availability"
        ? "answered"
        : "closed";
    } else if (state?.status === "rejected") {
      m.verdict = state.reason ?? "rejected";
      if (state.bond !== null) m.slash = { bond: state.bond, ...slashSplit(state.bond) };
    } else if (d.resolve_height !== null) m.verdict = "match";
    else if (state && state.challenge === null) {
      m.verdict = d.challenge_kind === "availability" ? "answered" : `closed (claim ${state.status})`;
    }
  });
  return out;
}
