/**
 * `bond {consensus_key, amount, possession}`, `unbond {consensus_key}`, `withdraw {consensus_key}`
 * (PROTOCOL §4). Lifecycle rules live in `workflows/validator.ts`; these handlers check ownership, keys and
 * money, advance the machine and store the result.
 */
import { reject } from "../../core/errors.ts";
import { bonded, hasPower, validatorMachine, type ValidatorState } from "../../workflows/validator.ts";
import { isConsensusPublicKey, possessionMessage, verifyEd25519 } from "../consensus_key.ts";
import type { LedgerWriter, ValidatorRecord } from "../state/accessors.ts";
import { checkAmount, type HandlerResult, type LedgerEnv, type TxContext, type TxKind } from "./context.ts";

/** Stores `record` with `state`, appending to its power history when its power changes at `env.height`. */
export function storeValidatorState(
  state: LedgerWriter,
  record: ValidatorRecord,
  next: ValidatorState,
  env: LedgerEnv,
): void {
  const before = hasPower(record.state) ? record.amount / env.params.bond_unit : 0;
  const after = hasPower(next) ? record.amount / env.params.bond_unit : 0;
  const history = before === after ? record.history : [...record.history, [env.height, after] as const];
  state.setValidator({ ...record, state: next, history });
}

function owned(ctx: TxContext, what: string): ValidatorRecord | ReturnType<typeof reject> {
  const key = ctx.body.consensus_key;
  if (!isConsensusPublicKey(key)) return reject("invalid_key", `Cannot ${what}: consensus_key is not 64 hex`);
  const record = ctx.state.validator(key);
  if (!record) return reject("unknown_validator", `Cannot ${what}: no validator has consensus key ${key}`);
  if (record.owner !== ctx.sender) {
    return reject("not_owner", `Cannot ${what}: validator ${key} is owned by ${record.owner}`);
  }
  return record;
}

/** The bond transaction kind. */
export const bond: TxKind = {
  fields: ["consensus_key", "amount", "possession"],
  handle(ctx: TxContext): HandlerResult {
    const { state, env, body, sender } = ctx;
    const key = body.consensus_key;
    if (!isConsensusPublicKey(key)) return reject("invalid_key", "Cannot bond: consensus_key is not 64 hex");
    const bad = checkAmount(body.amount, "amount");
    if (bad) return bad;
    const amount = body.amount as number;
    if (amount % env.params.bond_unit !== 0) {
      return reject(
        "invalid_bond_amount",
        `Cannot bond: amount is ${amount}, not a multiple of ${env.params.bond_unit}`,
      );
    }
    if (state.validator(key)) {
      return reject("reused_consensus_key", `Cannot bond: consensus key ${key} was bonded before`);
    }
    const message = possessionMessage({
      chain_id: ctx.chainId,
      owner: sender,
      consensus_key: key,
      amount,
      nonce: body.nonce,
    });
    if (!verifyEd25519(key, message, body.possession)) {
      return reject("invalid_possession", `Cannot bond: the possession proof does not verify for key ${key}`);
    }
    const account = state.account(sender);
    if (account.balance < amount) {
      return reject(
        "insufficient_funds",
        `Cannot bond: balance after fee is ${account.balance}, needed ${amount}`,
      );
    }
    state.setAccount(sender, { ...account, balance: account.balance - amount });
    state.setValidator({ owner: sender, consensus_key: key, amount, state: bonded(env), history: [] });
    return { ok: true };
  },
};

/** The unbond transaction kind. */
export const unbond: TxKind = {
  fields: ["consensus_key"],
  handle(ctx: TxContext): HandlerResult {
    const record = owned(ctx, "unbond");
    if ("ok" in record) return record;
    const othersActive = ctx.state.validators()
      .filter((v) => v.state.status === "active" && v.consensus_key !== record.consensus_key).length;
    const step = validatorMachine.apply(
      record.state,
      { type: "unbond", others_active: othersActive },
      ctx.env,
    );
    if (!step.ok) return step;
    storeValidatorState(ctx.state, record, step.state, ctx.env);
    return { ok: true };
  },
};

/** The withdraw transaction kind: returns the bond to its owner. */
export const withdraw: TxKind = {
  fields: ["consensus_key"],
  handle(ctx: TxContext): HandlerResult {
    const record = owned(ctx, "withdraw");
    if ("ok" in record) return record;
    const step = validatorMachine.apply(record.state, { type: "withdraw" }, ctx.env);
    if (!step.ok) return step;
    storeValidatorState(ctx.state, record, step.state, ctx.env);
    const account = ctx.state.account(record.owner);
    ctx.state.setAccount(record.owner, { ...account, balance: account.balance + record.amount });
    return { ok: true };
  },
};
