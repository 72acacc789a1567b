/**
 * A validator node: the ledger application on `<home>/state.sqlite`, the RPC on 127.0.0.1 behind the bounded
 * server (`core/bounded_server.ts`: idle, head, body and write deadlines and a connection cap), and either the
 * proposer (no `follow`, its mempool journaled in `<home>/mempool.sqlite`) or a replica following `follow`
 * (every call to the proposer under a deadline, `ledger/engine/upstream.ts`). The consensus key is
 * `<home>/consensus.key` when present. A node refuses a genesis whose id differs from the one its state was created with, and resumes
 * at its committed height after a restart (nothing committed is applied twice).
 *
 * @example
 * ```ts
 * const node = await startNode({ home: "/tmp/v0", genesis, port: 0 });
 * console.log(node.url); // http://127.0.0.1:<port>
 * await node.stop();
 * ```
 */
import { canonical, type JsonValue, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import { type AppOptions, LedgerApp } from "../app.ts";
import { type ConsensusKey, loadConsensusKeyFile } from "../consensus_key.ts";
import type { ServerLimits } from "../../core/bounded_server.ts";
import { type RpcNode, serveRpc } from "../rpc/server.ts";
import { Heights } from "./heights.ts";
import { Mempool, type MempoolLimits } from "./mempool.ts";
import { MempoolStore } from "./mempool_store.ts";
import { Proposer } from "./proposer.ts";
import { type HaltReport, Replica } from "./replica.ts";
import { assertReachable, callUpstream, UPSTREAM_TIMEOUT_MS } from "./upstream.ts";
import { LedgerView } from "../state/accessors.ts";
import { verdictsAhead } from "../training/verdict_ahead.ts";

/** How to start a node. */
export interface NodeOptions {
  readonly home: string;
  readonly genesis: JsonValue;
  /** The proposer's RPC URL; absent for the proposer itself. */
  readonly follow?: string;
  /** The RPC port on 127.0.0.1 (0 picks a free one). */
  readonly port?: number;
  /** Overrides the genesis block interval (ms). */
  readonly intervalMs?: number;
  readonly app?: AppOptions;
  /** Overrides of the proposer's mempool bounds. */
  readonly mempool?: Partial<MempoolLimits>;
  /** Overrides of the RPC's connection bounds. */
  readonly server?: Partial<ServerLimits>;
  /** How long a replica waits for its proposer on one call (default 10 s). */
  readonly upstreamTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

/** A running validator node. */
export interface ValidatorNode {
  readonly app: LedgerApp;
  readonly url: string;
  readonly role: "proposer" | "replica";
  /** Resolves when the node stops: null after `stop`, a report when a replica halts. */
  readonly done: Promise<HaltReport | null>;
  stop(): Promise<void>;
}

async function consensusKey(home: string): Promise<ConsensusKey | undefined> {
  try {
    await Deno.stat(`${home}/consensus.key`);
  } catch {
    return undefined;
  }
  return await loadConsensusKeyFile(`${home}/consensus.key`);
}

/** Opens the state, starts the RPC and the proposer or replica loop. */
export async function startNode(options: NodeOptions): Promise<ValidatorNode> {
  const log = options.log ?? ((line: string) => console.log(line));
  if (options.follow) assertReachable(options.follow);
  const upstream = options.follow?.replace(/\/$/, "");
  const upstreamMs = options.upstreamTimeoutMs ?? UPSTREAM_TIMEOUT_MS;
  await Deno.mkdir(options.home, { recursive: true });
  const key = await consensusKey(options.home);
  const app = LedgerApp.open(`${options.home}/state.sqlite`, options.genesis, options.app);
  const heights = new Heights(app.info().height);
  const controller = new AbortController();
  const pool = options.follow ? null : MempoolStore.open(`${options.home}/mempool.sqlite`);
  const mempool = pool
    ? new Mempool(app, { store: pool, ...(options.mempool ? { limits: options.mempool } : {}) })
    : null;
  const proposer = mempool ? new Proposer(app, mempool, heights, key) : null;
  const statePath = `${options.home}/state.sqlite`;
  const replica = upstream ? new Replica(app, upstream, heights, key, log, upstreamMs, statePath) : null;
  // A dispute whose objects were all sealed before a restart gets its verdict computed ahead again.
  verdictsAhead.enabled = true;
  verdictsAhead.schedule(statePath, new LedgerView(app.store));

  const rpc: RpcNode = {
    async broadcast(raw) {
      if (mempool) {
        const r = mempool.add(raw, Date.now());
        if (r.ok) await mempool.durable(); // persist before replying
        const { hash, ...check } = r;
        return { hash, check };
      }
      const res = await callUpstream(`${upstream}/broadcast_tx`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: raw as Uint8Array<ArrayBuffer>,
      }, upstreamMs);
      return parseJson(res.text);
    },
    async tx(hash) {
      const found = app.store.tx(hash);
      if (found) return { status: "committed", height: found.height, result: found.result };
      if (mempool) return mempool.has(hash) ? { status: "pending" } : { status: "unknown" };
      // A replica: what the proposer has seen but this node has not committed yet is pending here.
      let seen: { status?: string };
      try {
        seen = parseJson(
          (await callUpstream(`${upstream}/tx?hash=${hash}`, {}, upstreamMs)).text,
        ) as typeof seen;
      } catch (e) {
        if (e instanceof ProtocolError && e.code === "upstream_timeout") throw e;
        return { status: "unknown" };
      }
      return seen.status === "pending" || seen.status === "committed"
        ? { status: "pending" }
        : { status: "unknown" };
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
        role: proposer ? "proposer" : "replica",
        consensus_key: key?.publicKey ?? null,
        mempool: mempool?.size ?? 0,
      };
    },
    query: (path) => app.query(path),
    attest(body) {
      if (!proposer) {
        return {
          ok: false,
          code: "bad_request",
          message: "Cannot record attestation: this node is a replica",
        };
      }
      return { ...proposer.attest(body) };
    },
  };
  const server = serveRpc(rpc, options.port ?? 0, options.server);
  const url = server.url;
  const interval = options.intervalMs ?? app.params.block_interval_ms;

  const loop = (async (): Promise<HaltReport | null> => {
    if (replica) {
      const halt = await replica.run(controller.signal);
      await replica.idle();
      if (halt) {
        log(
          `HALT ${halt.code} at height ${halt.height}: proposer ${halt.proposer_app_hash}, replica ${halt.replica_app_hash}: ${halt.message}`,
        );
      }
      return halt;
    }
    let next = Date.now() + interval;
    while (!controller.signal.aborted) {
      const delay = next - Date.now();
      if (delay > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          controller.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
        });
      }
      if (controller.signal.aborted) break;
      next = Math.max(next + interval, Date.now());
      const head = proposer!.produce(Date.now());
      const b = app.store.block(head.height)!;
      const txs = (b.block as { txs: { body?: { kind?: unknown } }[] }).txs;
      log(`block ${head.height} txs ${txs.length} app_hash ${head.app_hash}`);
      if (txs.some((t) => t.body?.kind === "seal")) {
        verdictsAhead.schedule(statePath, new LedgerView(app.store));
      }
    }
    return null;
  })();

  let stopped: Promise<void> | null = null;
  const node: ValidatorNode = {
    app,
    url,
    role: proposer ? "proposer" : "replica",
    done: loop,
    stop() {
      stopped ??= (async () => {
        controller.abort();
        heights.wakeAll();
        await loop.catch(() => null);
        await server.close();
        pool?.close();
        app.close();
      })();
      return stopped;
    },
  };
  log(
    `validator ${node.role} listening on ${url} at height ${app.info().height} ${
      canonical(app.info().app_hash)
    }`,
  );
  return node;
}
