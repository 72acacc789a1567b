/** `transfer {to, amount}`: moves atoms from the sender to another account (PROTOCOL §3). */
import { reject } from "../../core/errors.ts";
import { isAccountIdCached } from "./account_ids.ts";
import { checkAmount, type TxContext, type TxKind } from "./context.ts";

/** The transfer transaction kind. */
export const transfer: TxKind = {
  fields: ["to", "amount"],
  handle({ state, sender, body }: TxContext) {
    if (!isAccountIdCached(body.to)) return reject("invalid_key", "Cannot transfer: to is not an account id");
    const bad = checkAmount(body.amount, "amount");
    if (bad) return bad;
    const amount = body.amount as number;
    const from = state.account(sender);
    if (from.balance < amount) {
      return reject(
        "insufficient_funds",
        `Cannot transfer: balance after fee is ${from.balance}, needed ${amount}`,
      );
    }
    state.setAccount(sender, { ...from, balance: from.balance - amount });
    const to = state.account(body.to);
    state.setAccount(body.to, { ...to, balance: to.balance + amount });
    return { ok: true };
  },
};
