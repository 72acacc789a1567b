/**
 * Applies the `moves` a lifecycle machine returned (workflows/money.ts) to balances and a job's escrow:
 * `lock` takes atoms from an account into the escrow (`insufficient_funds` when it cannot), `release` pays
 * out of the escrow, `burn` burns out of it, `mint` issues new atoms to an account and `mint_verifiers`
 * credits the verifier reward of the current block (paid to its committers in the next block, §4).
 */
import { reject, type Rejection } from "../../core/errors.ts";
import type { Move } from "../../workflows/money.ts";
import { creditVerifierReward } from "../boundary.ts";
import type { LedgerWriter } from "../state/accessors.ts";

/** Applies `moves` in order at `height`; returns the new escrow, or a rejection (the caller drops its overlay). */
export function applyMoves(
  state: LedgerWriter,
  moves: readonly Move[],
  escrow: number,
  height: number,
): { ok: true; escrow: number } | Rejection {
  for (const m of moves) {
    switch (m.op) {
      case "lock": {
        const a = state.account(m.account);
        if (a.balance < m.amount) {
          return reject(
            "insufficient_funds",
            `Cannot lock bond: balance after fee is ${a.balance}, needed ${m.amount}`,
          );
        }
        state.setAccount(m.account, { ...a, balance: a.balance - m.amount });
        escrow += m.amount;
        break;
      }
      case "release": {
        const a = state.account(m.account);
        state.setAccount(m.account, { ...a, balance: a.balance + m.amount });
        escrow -= m.amount;
        break;
      }
      case "burn":
        state.burn(m.amount);
        escrow -= m.amount;
        break;
      case "mint": {
        state.issue(m.amount);
        const a = state.account(m.account);
        state.setAccount(m.account, { ...a, balance: a.balance + m.amount });
        break;
      }
      case "mint_verifiers":
        creditVerifierReward(state, height, m.amount);
        break;
    }
  }
  if (escrow < 0) throw new Error(`Cannot apply moves: escrow would be ${escrow}`);
  return { ok: true, escrow };
}
