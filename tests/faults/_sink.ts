/**
 * The counting server of the crash matrix (127.0.0.1): `POST /deliver` keeps the first delivery per key and
 * counts every attempt; `POST /broadcast_tx` and `GET /tx` are a one-block-per-transaction ledger with the
 * shapes of `actors/runtime/rpc_types.ts`, remembering every hash each intent was sent with.
 */
import { canonical, parseJson } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";

/** What the sink saw. */
export interface SinkLog {
  /** Delivery key -> every body received under it (canonical text), in order. */
  readonly deliveries: Map<string, string[]>;
  /** Intent -> the distinct transaction hashes broadcast for it. */
  readonly intents: Map<string, Set<string>>;
  /** Hash -> how many times it was broadcast and its height. */
  readonly txs: Map<string, { sends: number; height: number }>;
}

/** A running sink. */
export interface Sink {
  readonly url: string;
  log: SinkLog;
  reset(): void;
  close(): Promise<void>;
}

function emptyLog(): SinkLog {
  return { deliveries: new Map(), intents: new Map(), txs: new Map() };
}

/** Starts the sink on a free port. */
export function startSink(): Sink {
  const state = { log: emptyLog() };
  const json = (v: unknown) =>
    new Response(canonical(v), { headers: { "content-type": "application/json" } });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const log = state.log;
    if (req.method === "POST" && url.pathname === "/deliver") {
      const text = await req.text();
      const body = parseJson(text) as { key: string };
      const seen = log.deliveries.get(body.key) ?? [];
      seen.push(canonical(body));
      log.deliveries.set(body.key, seen);
      return json({ key: body.key, accepted: true });
    }
    if (req.method === "POST" && url.pathname === "/broadcast_tx") {
      const raw = new Uint8Array(await req.arrayBuffer());
      const hash = sha256Hex(raw);
      const { intent } = parseJson(new TextDecoder().decode(raw)) as { intent: string };
      const hashes = log.intents.get(intent) ?? new Set();
      hashes.add(hash);
      log.intents.set(intent, hashes);
      const tx = log.txs.get(hash) ?? { sends: 0, height: log.txs.size + 1 };
      tx.sends++;
      log.txs.set(hash, tx);
      return json({ hash, check: { ok: true } });
    }
    if (req.method === "GET" && url.pathname === "/tx") {
      const tx = log.txs.get(url.searchParams.get("hash") ?? "");
      return json(
        tx === undefined
          ? { status: "unknown" }
          : { status: "committed", height: tx.height, result: { ok: true } },
      );
    }
    return new Response(canonical({ code: "not_found", message: url.pathname }), { status: 404 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    get log() {
      return state.log;
    },
    reset() {
      state.log = emptyLog();
    },
    async close() {
      await server.shutdown();
    },
  };
}
