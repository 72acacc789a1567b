/**
 * The two validator RPC shapes a submitting actor relies on (PROTOCOL §13). The ledger's RPC server answers
 * exactly these; `submit.ts` parses them strictly. All answers are canonical JSON.
 *
 * `POST /broadcast_tx`
 *   request body: the raw signed envelope bytes (its canonical JSON), sent as is;
 *   answer (200): `{"check":{"ok":true},"hash":"<64 hex>"}` or
 *                 `{"check":{"code":"stale_nonce","message":"...","ok":false},"hash":"<64 hex>"}`.
 *   `hash` is the raw hash: sha256 of the request body bytes, lowercase hex. `check` is the CheckTx result;
 *   `ok:false` means the transaction was not admitted and will not be included.
 *
 * `GET /tx?hash=<64 hex>`
 *   answer (200), one of:
 *   - `{"height":12,"result":{"ok":true},"status":"committed"}` — included in block `height`; `result` is
 *     the execution result (`{"code":..,"message":..,"ok":false}` when it was included but failed);
 *   - `{"status":"pending"}` — admitted, not yet in a block;
 *   - `{"status":"unknown"}` — never seen (or dropped from the pool).
 *
 * @example
 * ```ts
 * import { parseTxAnswer } from "./rpc_types.ts";
 * parseTxAnswer({ status: "pending" }); // { status: "pending" }
 * ```
 */
import { hasExactKeys, isObject, type JsonValue } from "../../core/canonical.ts";
import { isErrorCode, ProtocolError } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";

/** The paths. */
export const RPC_PATHS = { broadcastTx: "/broadcast_tx", tx: "/tx" } as const;

/** A CheckTx or execution result. */
export type TxResult = { readonly ok: true } | {
  readonly ok: false;
  readonly code: string;
  readonly message: string;
};

/** The answer of `POST /broadcast_tx`. */
export interface BroadcastAnswer {
  readonly hash: string;
  readonly check: TxResult;
}

/** The answer of `GET /tx?hash=`. */
export type TxAnswer =
  | { readonly status: "committed"; readonly height: number; readonly result: TxResult }
  | { readonly status: "pending" }
  | { readonly status: "unknown" };

function bad(what: string, value: JsonValue): never {
  throw new ProtocolError("bad_request", `Cannot read RPC answer: ${what} in ${JSON.stringify(value)}`);
}

/** Parses a result object strictly. */
export function parseTxResult(v: JsonValue): TxResult {
  if (!isObject(v)) bad("result is not an object", v);
  if (v.ok === true && hasExactKeys(v, ["ok"])) return { ok: true };
  if (
    v.ok === false && hasExactKeys(v, ["ok", "code", "message"]) && typeof v.code === "string" &&
    isErrorCode(v.code) && typeof v.message === "string"
  ) {
    return { ok: false, code: v.code, message: v.message };
  }
  return bad("result is not {ok:true} or {ok:false, code, message} with a known code", v);
}

/** Parses a `/broadcast_tx` answer strictly. */
export function parseBroadcastAnswer(v: JsonValue): BroadcastAnswer {
  if (!isObject(v) || !hasExactKeys(v, ["hash", "check"])) bad("expected exactly hash and check", v);
  if (typeof v.hash !== "string" || !isRoot(v.hash)) bad("hash is not 64 lowercase hex", v);
  return { hash: v.hash, check: parseTxResult(v.check!) };
}

/** Parses a `/tx?hash=` answer strictly. */
export function parseTxAnswer(v: JsonValue): TxAnswer {
  if (!isObject(v)) bad("answer is not an object", v);
  if (v.status === "pending" && hasExactKeys(v, ["status"])) return { status: "pending" };
  if (v.status === "unknown" && hasExactKeys(v, ["status"])) return { status: "unknown" };
  if (
    v.status === "committed" && hasExactKeys(v, ["status", "height", "result"]) &&
    typeof v.height === "number" && Number.isSafeInteger(v.height) && v.height >= 1
  ) {
    return { status: "committed", height: v.height, result: parseTxResult(v.result!) };
  }
  return bad("status is not committed (with height >= 1 and result), pending or unknown", v);
}
