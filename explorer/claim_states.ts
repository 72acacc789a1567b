/**
 * The ledger's state of each claim (`/claim?id=`), cached: a claim that reached a terminal state (settled,
 * rejected, expired) never changes again, so it is asked for once; a live one is asked again on every look.
 * Only the machine state is kept (the metadata, up to 512 KiB, is dropped), and the cache is bounded.
 */
import { isObject, type JsonObject } from "../core/canonical.ts";
import type { Move } from "../workflows/money.ts";
import type { ChainSource } from "./source.ts";

/** The parts of a claim's machine state the explorer shows. */
export interface ClaimState {
  readonly status: string;
  readonly reason: string | null;
  readonly bond: number | null;
  readonly moves: readonly Move[];
  /** The live challenge, when one is open. */
  readonly challenge: JsonObject | null;
  readonly deadline: number | null;
  readonly state: JsonObject;
}

const TERMINAL = new Set(["settled", "rejected", "expired"]);

/** The largest number of claim states kept. */
export const MAX_CLAIM_STATES = 20_000;

/** Reads a claim's state from a stored machine state. */
export function claimState(state: JsonObject): ClaimState {
  const claim = isObject(state.claim) ? state.claim : {};
  return {
    status: typeof state.status === "string" ? state.status : "unknown",
    reason: typeof state.reason === "string" ? state.reason : null,
    bond: typeof claim.bond === "number" ? claim.bond : null,
    moves: Array.isArray(state.moves) ? state.moves as unknown as Move[] : [],
    challenge: isObject(claim.challenge) ? claim.challenge : null,
    deadline: typeof claim.deadline === "number" ? claim.deadline : null,
    state,
  };
}

/** Atoms minted by a settled claim's moves (workers and verifiers). */
export function minted(moves: readonly Move[]): number {
  return moves.reduce((n, m) => n + (m.op === "mint" || m.op === "mint_verifiers" ? m.amount : 0), 0);
}

/** A bounded cache of claim states over a source. */
export class ClaimStates {
  readonly #source: ChainSource;
  readonly #done = new Map<string, ClaimState>();

  constructor(source: ChainSource) {
    this.#source = source;
  }

  /** The state of `claimId`, or null when the ledger does not know it. */
  async get(claimId: string): Promise<ClaimState | null> {
    const cached = this.#done.get(claimId);
    if (cached) return cached;
    const answer = await this.#source.query(`/claim?id=${claimId}`);
    if (!isObject(answer) || !isObject(answer.state)) return null;
    const s = claimState(answer.state);
    if (TERMINAL.has(s.status)) {
      this.#done.set(claimId, s);
      if (this.#done.size > MAX_CLAIM_STATES) this.#done.delete(this.#done.keys().next().value!);
    }
    return s;
  }
}
