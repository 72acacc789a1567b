/**
 * A tiny validator RPC for tests (raw HTTP/1.1 on 127.0.0.1) implementing the shapes of
 * `actors/runtime/rpc_types.ts`, which can drop replies: it closes the connection without answering.
 */
import { canonical } from "../../../core/canonical.ts";
import { sha256Hex } from "../../../core/digest.ts";
import type { TxResult } from "../../../actors/runtime/rpc_types.ts";

/** What to do with the n-th broadcast. */
export type BroadcastMode = "answer" | "drop_after_store" | "drop_before_store";

/** A running lossy RPC. */
export interface LossyRpc {
  readonly url: string;
  /** Every broadcast body received, in order (including dropped ones). */
  readonly received: Uint8Array[];
  /** The n-th broadcast (0-based) is handled by `plan[n]` (default "answer"). */
  plan: BroadcastMode[];
  /** When set, CheckTx refuses every transaction with this result. */
  check: TxResult;
  /** A stored transaction is committed on this lookup (1 = first lookup); Infinity = never. */
  commitOnLookup: number;
  /** The execution result of committed transactions. */
  result: TxResult;
  /** Requests answered or dropped so far. */
  requests: number;
  close(): Promise<void>;
}

const enc = new TextEncoder();

/** Starts a lossy RPC on a free port. */
export function startLossyRpc(): LossyRpc {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pool = new Map<string, { lookups: number; height: number | null }>();
  let height = 0;
  const rpc: LossyRpc = {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    received: [],
    plan: [],
    check: { ok: true },
    commitOnLookup: 1,
    result: { ok: true },
    requests: 0,
    async close() {
      listener.close();
      await loop.catch(() => {});
    },
  };

  function answer(path: string, query: URLSearchParams, method: string, body: Uint8Array): string | null {
    if (method === "POST" && path === "/broadcast_tx") {
      const mode = rpc.plan[rpc.received.length] ?? "answer";
      rpc.received.push(body);
      const hash = sha256Hex(body);
      if (mode === "drop_before_store") return null;
      if (rpc.check.ok && !pool.has(hash)) pool.set(hash, { lookups: 0, height: null });
      return mode === "drop_after_store" ? null : canonical({ hash, check: rpc.check });
    }
    if (method === "GET" && path === "/tx") {
      const entry = pool.get(query.get("hash") ?? "");
      if (entry === undefined) return canonical({ status: "unknown" });
      entry.lookups++;
      if (entry.height === null && entry.lookups >= rpc.commitOnLookup) entry.height = ++height;
      return entry.height === null
        ? canonical({ status: "pending" })
        : canonical({ status: "committed", height: entry.height, result: rpc.result });
    }
    return canonical({ code: "not_found", message: `no path ${path}` });
  }

  async function serveOne(conn: Deno.Conn): Promise<void> {
    try {
      let data = new Uint8Array(0);
      const buf = new Uint8Array(65536);
      let headerEnd = -1;
      let length = 0;
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) return;
        const next = new Uint8Array(data.length + n);
        next.set(data);
        next.set(buf.subarray(0, n), data.length);
        data = next;
        if (headerEnd < 0) {
          const text = new TextDecoder().decode(data);
          const at = text.indexOf("\r\n\r\n");
          if (at >= 0) {
            headerEnd = at + 4;
            const m = /content-length:\s*(\d+)/i.exec(text.slice(0, at));
            length = m ? Number(m[1]) : 0;
          }
        }
        if (headerEnd >= 0 && data.length >= headerEnd + length) break;
      }
      const head = new TextDecoder().decode(data.subarray(0, headerEnd));
      const [method, target] = head.split(" ") as [string, string];
      const url = new URL(target, "http://x");
      rpc.requests++;
      const out = answer(url.pathname, url.searchParams, method, data.slice(headerEnd, headerEnd + length));
      if (out === null) return; // dropped: close without a word
      const bytes = enc.encode(out);
      await conn.write(enc.encode(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${bytes.length}\r\nconnection: close\r\n\r\n`,
      ));
      await conn.write(bytes);
    } finally {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
  }

  const loop = (async () => {
    for await (const conn of listener) serveOne(conn).catch(() => {});
  })();
  return rpc;
}
