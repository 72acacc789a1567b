/**
 * A small client of the validator RPC (PROTOCOL §13) for tasks and tests. Answers are parsed strictly;
 * a 4xx/5xx answer `{ok: false, code, message}` is thrown as a `ProtocolError` with its code.
 *
 * @example
 * ```ts
 * const client = new LedgerClient("http://127.0.0.1:26657");
 * const { height } = await client.status();
 * ```
 */
import { canonicalBytes, isObject, type JsonValue, parseJson } from "../../core/canonical.ts";
import { isErrorCode, ProtocolError, RetryableError } from "../../core/errors.ts";
import type { Envelope } from "../envelope.ts";

/** The `/status` answer. */
export interface StatusAnswer {
  readonly chain_id: string;
  readonly genesis_id: string;
  readonly height: number;
  readonly app_hash: string;
  readonly time: number;
  readonly role: string;
  readonly consensus_key: string | null;
  readonly mempool: number;
}

/** The `/broadcast_tx` answer. */
export interface BroadcastAnswer {
  readonly hash: string;
  /** `held`: admitted as a future nonce, committed only once the sender's missing lower nonces arrive. */
  readonly check: { ok: boolean; held?: boolean; code?: string; message?: string };
}

/** The `/tx` answer. */
export type TxAnswer =
  | { status: "committed"; height: number; result: { ok: boolean; code?: string; message?: string } }
  | { status: "pending" }
  | { status: "unknown" };

/** A client of one node's RPC. */
export class LedgerClient {
  readonly url: string;
  constructor(url: string) {
    this.url = url.replace(/\/$/, "");
  }

  async #call(path: string, init?: RequestInit): Promise<JsonValue> {
    let res: Response;
    try {
      res = await fetch(this.url + path, init);
    } catch (e) {
      throw new RetryableError(`Cannot reach ${this.url}${path}: ${(e as Error).message}`, { cause: e });
    }
    const value = parseJson(await res.text());
    if (res.status !== 200) {
      const code = isObject(value) && typeof value.code === "string" && isErrorCode(value.code)
        ? value.code
        : "bad_request";
      const message = isObject(value) && typeof value.message === "string"
        ? value.message
        : `HTTP ${res.status}`;
      throw new ProtocolError(code, message);
    }
    return value;
  }

  /** The node's chain facts. */
  async status(): Promise<StatusAnswer> {
    return await this.#call("/status") as unknown as StatusAnswer;
  }

  /** An account's balance and next nonce. */
  async account(id: string): Promise<{ id: string; balance: number; nonce: number; height: number }> {
    return await this.#call(`/account/${id}`) as {
      id: string;
      balance: number;
      nonce: number;
      height: number;
    };
  }

  /** The validator set. */
  async validators(): Promise<JsonValue> {
    return await this.#call("/validators");
  }

  /** Broadcasts a signed envelope (its canonical bytes). */
  async broadcast(envelope: Envelope): Promise<BroadcastAnswer> {
    const body = canonicalBytes(envelope) as Uint8Array<ArrayBuffer>;
    const headers = { "content-type": "application/json" };
    return await this.#call("/broadcast_tx", { method: "POST", headers, body }) as unknown as BroadcastAnswer;
  }

  /** Where a transaction is, by raw hash. */
  async tx(hash: string): Promise<TxAnswer> {
    return await this.#call(`/tx?hash=${hash}`) as unknown as TxAnswer;
  }

  /** Polls `/tx` until the transaction is committed or `ms` pass (then its last status). */
  async waitForTx(hash: string, ms = 30_000): Promise<TxAnswer> {
    const end = Date.now() + ms;
    for (;;) {
      const t = await this.tx(hash);
      if (t.status === "committed" || Date.now() > end) return t;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
