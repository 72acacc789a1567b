/**
 * A validator under CometBFT: our application on its ABCI socket (TCP on 127.0.0.1, a port picked by the OS
 * and handed to CometBFT as `--proxy_app`), the pinned `cometbft`
 * process on `<home>/cometbft` (its log in `<home>/cometbft/cometbft.log`), and our RPC on 127.0.0.1 in front
 * (PROTOCOL §13), so actors use the same `/broadcast_tx`, `/tx`, `/block`, `/status` and query paths as under
 * the embedded engine. Broadcasts go to CometBFT's `broadcast_tx_sync` (our `CheckTx` answers them); `/tx`
 * answers committed results from our store and `pending` for what our `CheckTx` admitted. Supervised: when
 * CometBFT exits, the node stops; `stop()` ends CometBFT (SIGTERM, then SIGKILL after 10 s) before closing
 * the state. CometBFT itself stops when its ABCI connection breaks, so a killed node does not leave it
 * running.
 */
import { Buffer } from "node:buffer";
import { canonical, type JsonValue } from "../../core/canonical.ts";
import { LedgerApp } from "../app.ts";
import { type ConsensusKey, loadConsensusKeyFile } from "../consensus_key.ts";
import { rawHash } from "../envelope.ts";
import type { ServerLimits } from "../../core/bounded_server.ts";
import { type RpcNode, serveRpc } from "../rpc/server.ts";
import { Heights } from "../engine/heights.ts";
import { AbciApplication } from "./application.ts";
import { cometHomeOf, cometRpcOf } from "./comet_home.ts";
import { serveAbci } from "./server.ts";
import { errorCodeOf } from "./wire_values.ts";

/** How to start a CometBFT validator. */
export interface CometNodeOptions {
  readonly home: string;
  readonly genesis: JsonValue;
  /** The `cometbft` binary. */
  readonly cometbft: string;
  /** Our RPC port on 127.0.0.1 (0 picks a free one). */
  readonly port?: number;
  /** Bounds of our RPC server's connections (defaults `SERVER_LIMITS`), as the embedded engine takes them. */
  readonly server?: Partial<ServerLimits>;
  readonly log?: (line: string) => void;
}

/** A running CometBFT validator. */
export interface CometNode {
  readonly app: LedgerApp;
  readonly url: string;
  /** CometBFT's own RPC. */
  readonly cometRpc: string;
  /** Resolves with CometBFT's exit code when it exits, or null after `stop`. */
  readonly done: Promise<number | null>;
  stop(): Promise<void>;
}

async function consensusKey(home: string): Promise<ConsensusKey | null> {
  try {
    return await loadConsensusKeyFile(`${home}/consensus.key`);
  } catch {
    return null;
  }
}

/** Sends `raw` to CometBFT's mempool and maps the answer to ours (`{hash, check}`). */
async function broadcastTo(cometRpc: string, raw: Uint8Array): Promise<JsonValue> {
  const hash = rawHash(raw);
  let answer: { result?: { code: number; log: string }; error?: { data?: string; message?: string } };
  try {
    const res = await fetch(cometRpc, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "broadcast_tx_sync",
        params: { tx: Buffer.from(raw).toString("base64") },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    answer = await res.json();
  } catch (e) {
    return {
      hash,
      check: { ok: false, code: "unavailable", message: `Cannot reach CometBFT: ${(e as Error).message}` },
    };
  }
  if (answer.error) {
    const why = `${answer.error.data ?? ""} ${answer.error.message ?? ""}`;
    // The same bytes again: CometBFT keeps only admitted transactions in its cache.
    if (why.includes("tx already exists in cache")) return { hash, check: { ok: true } };
    const code = why.includes("mempool is full") ? "mempool_full" : "unavailable";
    return {
      hash,
      check: { ok: false, code, message: `Cannot admit transaction: CometBFT says ${why.trim()}` },
    };
  }
  const r = answer.result!;
  if (r.code === 0) return { hash, check: { ok: true } };
  return { hash, check: { ok: false, code: errorCodeOf(r.code) ?? "internal_error", message: r.log } };
}

/** Starts the application, its ABCI socket, our RPC, then CometBFT. */
export async function startCometNode(options: CometNodeOptions): Promise<CometNode> {
  const log = options.log ?? ((line: string) => console.log(line));
  const home = await Deno.realPath(options.home);
  const cometHome = cometHomeOf(home);
  const cometRpc = await cometRpcOf(home);
  const key = await consensusKey(home);
  const app = LedgerApp.open(`${home}/state.sqlite`, options.genesis);
  const heights = new Heights(app.info().height);
  const abci = new AbciApplication(app, log);
  let lastLogged = 0;
  abci.onCommit = (height) => {
    heights.committed(height);
    if (height - lastLogged >= 1) {
      lastLogged = height;
      const b = app.store.block(height);
      const txs = (b?.block as { txs?: unknown[] } | undefined)?.txs?.length ?? 0;
      log(`block ${height} txs ${txs} app_hash ${app.info().app_hash}`);
    }
  };
  const abciServer = serveAbci({ transport: "tcp", hostname: "127.0.0.1", port: 0 }, (r) => abci.handle(r), {
    log,
  });

  const rpc: RpcNode = {
    broadcast: (raw) => broadcastTo(cometRpc, raw),
    tx(hash) {
      const found = app.store.tx(hash);
      if (found) return Promise.resolve({ status: "committed", height: found.height, result: found.result });
      return Promise.resolve({ status: abci.isPending(hash) ? "pending" : "unknown" });
    },
    async block(height, waitMs) {
      await heights.wait(height, waitMs);
      const b = app.store.block(height);
      return b ? { height: b.height, block: b.block, app_hash: b.app_hash, results: b.results } : null;
    },
    status() {
      const info = app.info();
      return {
        chain_id: info.chain_id,
        genesis_id: info.genesis_id,
        height: info.height,
        app_hash: info.app_hash,
        time: info.time,
        role: "validator",
        engine: "cometbft",
        consensus_key: key?.publicKey ?? null,
        mempool: abci.pendingCount,
      };
    },
    query: (path) => app.query(path),
    attest: () => ({
      ok: false,
      code: "bad_request",
      message: "Cannot record attestation: this node runs under CometBFT, whose commits are the attestations",
    }),
  };
  const server = serveRpc(rpc, options.port ?? 0, options.server);
  const url = server.url;

  const child = new Deno.Command(options.cometbft, {
    args: ["start", "--home", cometHome, "--proxy_app", abciServer.proxyApp],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logFile = await Deno.open(`${cometHome}/cometbft.log`, { create: true, append: true });
  const copying = Promise.all([child.stdout, child.stderr].map(async (stream) => {
    for await (const chunk of stream) await logFile.write(chunk);
  })).catch(() => {});
  let stopping = false;
  const exited = child.status.then(async (s) => {
    await copying;
    logFile.close();
    return s.code;
  });

  let stopped: Promise<void> | null = null;
  const shutdown = () => {
    stopped ??= (async () => {
      stopping = true;
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      const t = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await exited;
      clearTimeout(t);
      heights.wakeAll();
      await abciServer.close();
      await server.close();
      app.close();
    })();
    return stopped;
  };
  const done = exited.then(async (code) => {
    if (stopping) return null;
    log(`cometbft exited with ${code} (see ${cometHome}/cometbft.log); stopping`);
    await shutdown();
    return code;
  });
  log(
    `validator cometbft listening on ${url} at height ${app.info().height} ${canonical(app.info().app_hash)}`,
  );
  return { app, url, cometRpc, done, stop: shutdown };
}
