/**
 * Applies one verified transaction to a block overlay (PROTOCOL §2): exact field set, chain id, nonce, fee,
 * then the kind's handler, all in a child overlay. Accepted: the child is merged, the nonce incremented and
 * the fee burned. Rejected: the child is dropped, so nothing changes, not even the nonce.
 */
import { hasExactKeys } from "../../core/canonical.ts";
import { reject } from "../../core/errors.ts";
import type { VerifiedEnvelope } from "../envelope.ts";
import { LedgerWriter } from "../state/accessors.ts";
import type { Overlay } from "../state/overlay.ts";
import type { TxResult } from "../state/store.ts";
import type { HandlerResult, LedgerEnv, TxContext, TxKind } from "./context.ts";
import { transfer } from "./transfer.ts";
import { bond, unbond, withdraw } from "./validators.ts";
import { claim, reserve, type TrainingKind } from "./training.ts";
import { challenge, resolve, seal, upload } from "./dispute.ts";
import { infer, respond } from "./inference.ts";
import { grow } from "./growth.ts";
import { finishEvaluationTx, openEvaluationTx, scoreTx } from "./evaluation.ts";
import { proposeDataKind, voteDataKind } from "./data.ts";

/** Every transaction kind of the protocol so far (training kinds also receive the txid). */
export const TX_KINDS: Readonly<Record<string, TxKind | TrainingKind>> = {
  transfer,
  bond,
  unbond,
  withdraw,
  reserve,
  claim,
  challenge,
  upload,
  seal,
  resolve,
  grow,
  infer,
  respond,
  propose_data: proposeDataKind,
  vote_data: voteDataKind,
  open_evaluation: openEvaluationTx,
  score: scoreTx,
  finish_evaluation: finishEvaluationTx,
};

function check(tx: VerifiedEnvelope, state: LedgerWriter, env: LedgerEnv, chainId: string): HandlerResult {
  const body = tx.envelope.body;
  const kind = Object.hasOwn(TX_KINDS, body.kind) ? TX_KINDS[body.kind]! : undefined;
  if (!kind) {
    return reject("unknown_kind", `Cannot apply transaction: kind ${JSON.stringify(body.kind)} is unknown`);
  }
  if (!hasExactKeys(body, ["kind", "chain_id", "nonce", ...kind.fields])) {
    const got = Object.keys(body).sort().join(", ");
    return reject(
      "invalid_body",
      `Cannot apply ${body.kind}: fields are ${got}, expected kind, chain_id, nonce, ${
        kind.fields.join(", ")
      }`,
    );
  }
  if (body.chain_id !== chainId) {
    return reject(
      "wrong_chain_id",
      `Cannot apply transaction: chain_id is ${body.chain_id}, expected ${chainId}`,
    );
  }
  const account = state.account(tx.sender);
  if (body.nonce < account.nonce) {
    return reject(
      "stale_nonce",
      `Cannot apply transaction: nonce is ${body.nonce}, expected ${account.nonce}`,
    );
  }
  if (body.nonce > account.nonce) {
    return reject(
      "future_nonce",
      `Cannot apply transaction: nonce is ${body.nonce}, expected ${account.nonce}`,
    );
  }
  const fee = env.params.fee;
  if (account.balance < fee) {
    return reject(
      "insufficient_funds",
      `Cannot apply transaction: balance is ${account.balance}, fee is ${fee}`,
    );
  }
  state.setAccount(tx.sender, { balance: account.balance - fee, nonce: account.nonce + 1 });
  state.burn(fee);
  const ctx: TxContext = { state, env, chainId, sender: tx.sender, body };
  return kind.handle(ctx, tx.txid);
}

/** Applies `tx` on top of `block` and returns its result; a rejection leaves `block` untouched. */
export function executeTx(tx: VerifiedEnvelope, block: Overlay, env: LedgerEnv, chainId: string): TxResult {
  const child = block.fork();
  const result = check(tx, new LedgerWriter(child), env, chainId);
  if (!result.ok) return { ok: false, code: result.code, message: result.message };
  child.mergeInto(block);
  return { ok: true };
}
