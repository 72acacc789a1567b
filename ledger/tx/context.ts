/**
 * What a transaction handler receives: a writer over the transaction's own overlay (dropped if the handler
 * rejects), the sender, the checked body and the consensus environment. Handlers are thin: check, call the
 * typed state operations and the lifecycle machines, return a result.
 */
import type { JsonObject } from "../../core/canonical.ts";
import type { Rejection } from "../../core/errors.ts";
import type { MachineEnv } from "../../workflows/machine.ts";
import type { LedgerParams } from "../../genesis/schema.ts";
import type { LedgerWriter } from "../state/accessors.ts";

/** The environment of a transaction: height, block time, params. */
export type LedgerEnv = MachineEnv<LedgerParams>;

/** The inputs of one transaction handler. */
export interface TxContext {
  readonly state: LedgerWriter;
  readonly env: LedgerEnv;
  readonly chainId: string;
  readonly sender: string;
  readonly body: JsonObject & { kind: string; chain_id: string; nonce: number };
}

/** What a handler returns. */
export type HandlerResult = { ok: true } | Rejection;

/** A transaction kind: its exact extra fields and its handler. */
export interface TxKind {
  /** The body fields besides `kind`, `chain_id` and `nonce`. */
  readonly fields: readonly string[];
  readonly handle: (ctx: TxContext) => HandlerResult;
}

/** `invalid_amount` unless `value` is a positive safe integer. */
export function checkAmount(value: unknown, what: string): Rejection | null {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    return {
      ok: false,
      code: "invalid_amount",
      message: `Cannot apply transaction: ${what} is ${
        JSON.stringify(value)
      }, expected a positive integer of atoms`,
    };
  }
  return null;
}
