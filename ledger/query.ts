/**
 * Read-only queries (PROTOCOL §13): `/account/<id>`, `/validators`, `/status`, `/supply` (the money totals:
 * `{height, genesis_supply, issued, burned}`), and the training paths of
 * `ledger/training/query.ts` (`/lifecycle`, `/candidate`, `/claim?id=`, `/work?identity=`, `/manifest?root=`,
 * `/batch?root=`, `/object/<root>`), the data paths of `ledger/data/query.ts` (`/data`, `/data/proposal`) and
 * the inference paths of `ledger/inference/query.ts` (`/inference`) and the evaluation paths of
 * `ledger/evaluation/query.ts` (`/evaluation`). `path` may carry a query string. They receive a `LedgerView`, which has
 * no write methods, so a query cannot change state.
 */
import type { JsonValue } from "../core/canonical.ts";
import { hasPower, type ValidatorState } from "../workflows/validator.ts";
import type { LedgerParams } from "../genesis/schema.ts";
import type { LedgerView } from "./state/accessors.ts";
import type { ChainHead } from "./state/store.ts";
import { isAccountId } from "./keys.ts";
import { answerTrainingQuery } from "./training/query.ts";
import { answerInferenceQuery } from "./inference/query.ts";
import { answerDataQuery } from "./data/query.ts";
import { answerEvaluationQuery } from "./evaluation/query.ts";

/**
 * What will happen next to a validator in `state` (shown by `/validators` as `change`): a pending bond
 * activates, a leaving validator is removed, a removed one becomes withdrawable, a jailed one waits for its
 * owner's unbond; null when nothing is scheduled.
 */
export function pendingChange(state: ValidatorState, amount: number, params: LedgerParams): JsonValue {
  switch (state.status) {
    case "pending":
      return { change: "activate", height: state.activation_height, power: amount / params.bond_unit };
    case "leaving":
      return { change: "remove", height: state.leave_height };
    case "cooldown":
      return {
        change: "withdrawable",
        height: state.removed_height + params.evidence_blocks,
        time: state.removed_time + params.evidence_ms,
      };
    case "jailed":
      return { change: "unbond_to_withdraw", height: state.jailed_height };
    default:
      return null;
  }
}

/** Answers `path` against `view`; null when the path is not a query. */
export function answerQuery(
  path: string,
  view: LedgerView,
  head: ChainHead & { chain_id: string },
  ledgerParams?: LedgerParams,
): JsonValue | null {
  const q = path.indexOf("?");
  const params = new URLSearchParams(q < 0 ? "" : path.slice(q + 1));
  path = q < 0 ? path : path.slice(0, q);
  if (path === "/status") {
    return {
      chain_id: head.chain_id,
      genesis_id: head.genesis_id,
      height: head.height,
      app_hash: head.app_hash,
      time: head.time,
    };
  }
  if (path === "/supply") {
    const t = view.totals();
    return { height: head.height, genesis_supply: t.genesis_supply, issued: t.issued, burned: t.burned };
  }
  if (path === "/validators") {
    return {
      height: head.height,
      validators: view.validators().map((v) => ({
        consensus_key: v.consensus_key,
        owner: v.owner,
        amount: v.amount,
        power: hasPower(v.state) ? view.powerAt(v.consensus_key, head.height) : 0,
        state: v.state as unknown as JsonValue,
        ...(ledgerParams ? { change: pendingChange(v.state, v.amount, ledgerParams) } : {}),
      })),
    };
  }
  const m = /^\/account\/([0-9a-f]{66})$/.exec(path);
  if (m && isAccountId(m[1])) {
    const a = view.account(m[1]!);
    return { id: m[1]!, balance: a.balance, nonce: a.nonce, height: head.height };
  }
  return answerDataQuery(path, params, view) ?? answerEvaluationQuery(path, params, view) ??
    answerTrainingQuery(path, params, view, head.height) ??
    answerInferenceQuery(path, params, view, head.height);
}
