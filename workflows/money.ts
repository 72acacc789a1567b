/**
 * Money movements a lifecycle transition asks the ledger to perform, and the pure reward arithmetic of §5.
 *
 * The machines decide outcomes; the ledger moves money. Every state a machine produces carries `moves`, the
 * movements caused by the transition that produced it, in the order to apply them. All amounts are integer
 * atoms. An instance's escrow is Σ lock − Σ release − Σ burn, and every terminal state leaves it at zero.
 *
 * @example
 * ```ts
 * import { splitReward } from "./money.ts";
 * splitReward(1_000_000, 2_000, ["a", "b", "c"]);
 * // { verifier: 200_000, workers: [["a", 266_667], ["b", 266_667], ["c", 266_666]] }
 * ```
 */
import { BPS } from "./params.ts";

/** One movement of atoms. `lock` moves into the instance's escrow; `release` and `burn` move out of it. */
export type Move =
  | { readonly op: "lock"; readonly account: string; readonly amount: number }
  | { readonly op: "release"; readonly account: string; readonly amount: number }
  | { readonly op: "burn"; readonly amount: number }
  | { readonly op: "mint"; readonly account: string; readonly amount: number }
  | { readonly op: "mint_verifiers"; readonly amount: number };

/** A lock of `amount` from `account` into escrow. */
export function lock(account: string, amount: number): Move {
  return { op: "lock", account, amount };
}

/** A release of `amount` from escrow to `account` (a refund or a payment out of escrow). */
export function release(account: string, amount: number): Move {
  return { op: "release", account, amount };
}

/** A burn of `amount` from escrow. */
export function burn(amount: number): Move {
  return { op: "burn", amount };
}

/** Drops movements of zero atoms, so that a zero remainder never appears as a move. */
export function nonZero(moves: readonly Move[]): Move[] {
  return moves.filter((m) => m.amount !== 0);
}

/** The escrow left after `moves`: Σ lock − Σ release − Σ burn. */
export function escrowAfter(moves: readonly Move[], start = 0): number {
  let escrow = start;
  for (const m of moves) {
    if (m.op === "lock") escrow += m.amount;
    else if (m.op === "release" || m.op === "burn") escrow -= m.amount;
  }
  return escrow;
}

/** `floor(amount · bps / 10,000)` computed exactly (BigInt, so any safe amount is exact). */
export function shareOf(amount: number, bps: number): number {
  return Number((BigInt(amount) * BigInt(bps)) / BigInt(BPS));
}

/** The part of an expired bond that is burned: 10% rounded down (§5, §6); the rest is refunded. */
export function expiryBurn(bond: number): number {
  return Math.floor(bond / 10);
}

/** The slash of a rejected claim: the challenger receives half the claim bond rounded down, the rest burns. */
export function slashSplit(bond: number): { challenger: number; burned: number } {
  const challenger = Math.floor(bond / 2);
  return { challenger, burned: bond - challenger };
}

/**
 * Splits a minted training reward (§5): `verifier_share` of it (rounded down) goes to the block's verifier
 * reward, the rest is split equally among the workers in order and the first `rest mod n` get one extra atom.
 */
export function splitReward(
  reward: number,
  verifierShareBps: number,
  workers: readonly string[],
): { verifier: number; workers: [string, number][] } {
  if (workers.length === 0) throw new Error("Cannot split reward: the worker list is empty");
  const verifier = shareOf(reward, verifierShareBps);
  const rest = reward - verifier;
  const n = workers.length;
  const each = Math.floor(rest / n);
  const extra = rest % n;
  return { verifier, workers: workers.map((w, i) => [w, each + (i < extra ? 1 : 0)]) };
}

/** The movements that mint a training reward: the verifier share, then each worker's part. */
export function rewardMoves(reward: number, verifierShareBps: number, workers: readonly string[]): Move[] {
  const split = splitReward(reward, verifierShareBps, workers);
  return nonZero([
    { op: "mint_verifiers", amount: split.verifier },
    ...split.workers.map(([account, amount]): Move => ({ op: "mint", account, amount })),
  ]);
}
