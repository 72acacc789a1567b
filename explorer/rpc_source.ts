/**
 * The explorer's source for a live network: a validator's RPC (PROTOCOL §13) over HTTP. Every request has a
 * timeout and every answer a byte bound, so a slow or hostile endpoint cannot hold the explorer or fill its
 * memory. Only `GET` is ever sent.
 *
 * @example
 * ```ts
 * import { RpcSource } from "./rpc_source.ts";
 * const source = new RpcSource("http://127.0.0.1:26657");
 * (await source.status()).height;
 * ```
 */
import { canonicalBytes, isObject, type JsonObject, type JsonValue, parseJson } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { ProtocolError } from "../core/errors.ts";
import type { BlockRecord, ChainSource, ChainStatus, TxOutcome } from "./source.ts";

/** The largest answer read: a block is at most 8 MiB of transactions plus its results. */
export const MAX_RPC_ANSWER_BYTES = 16 * 1024 * 1024;
/** How long one request may take. */
export const RPC_TIMEOUT_MS = 10_000;

/** Reads a response body up to `limit` bytes; a longer one is refused. */
async function boundedText(res: Response, limit: number, what: string): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of res.body ?? new ReadableStream<Uint8Array>()) {
    size += part.length;
    if (size > limit) {
      await res.body?.cancel().catch(() => {});
      throw new ProtocolError("too_large", `Cannot read ${what}: the answer exceeds ${limit} bytes`);
    }
    parts.push(part);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) (all.set(p, at), at += p.length);
  return new TextDecoder().decode(all);
}

/** A validator's RPC as a chain source. */
export class RpcSource implements ChainSource {
  readonly url: string;
  readonly description: string;

  constructor(url: string) {
    this.url = url.replace(/\/+$/, "");
    this.description = `rpc ${this.url}`;
  }

  /** GET `path`; null on 404; an error naming the URL otherwise. */
  async #get(path: string): Promise<JsonValue | null> {
    const where = this.url + path;
    let res: Response;
    try {
      res = await fetch(where, { signal: AbortSignal.timeout(RPC_TIMEOUT_MS) });
    } catch (e) {
      throw new Error(`Cannot reach ${where}: ${(e as Error).message}`);
    }
    const text = await boundedText(res, MAX_RPC_ANSWER_BYTES, where);
    if (res.status === 404) return null;
    if (res.status !== 200) throw new Error(`Cannot read ${where}: HTTP ${res.status} ${text.slice(0, 200)}`);
    return parseJson(text);
  }

  async status(): Promise<ChainStatus> {
    const s = await this.#get("/status");
    if (!isObject(s) || typeof s.height !== "number" || typeof s.app_hash !== "string") {
      throw new Error(`Cannot read ${this.url}/status: not a validator status answer`);
    }
    return {
      chain_id: typeof s.chain_id === "string" ? s.chain_id : null,
      genesis_id: String(s.genesis_id),
      height: s.height,
      app_hash: s.app_hash,
      time: Number(s.time),
    };
  }

  async block(height: number): Promise<BlockRecord | null> {
    const b = await this.#get(`/block?height=${height}`);
    if (!isObject(b) || !isObject(b.block) || typeof b.app_hash !== "string") return null;
    return {
      height,
      block: b.block as JsonObject,
      app_hash: b.app_hash,
      results: Array.isArray(b.results) ? b.results as unknown as TxOutcome[] : [],
    };
  }

  async tx(hash: string): Promise<{ height: number; index: number } | null> {
    const t = await this.#get(`/tx?hash=${hash}`);
    if (!isObject(t) || t.status !== "committed" || typeof t.height !== "number") return null;
    const b = await this.block(t.height);
    const txs = (b?.block.txs ?? []) as JsonValue[];
    const index = txs.findIndex((e) => sha256Hex(canonicalBytes(e)) === hash);
    return index < 0 ? null : { height: t.height, index };
  }

  query(path: string): Promise<JsonValue | null> {
    return this.#get(path);
  }

  close(): void {}
}
