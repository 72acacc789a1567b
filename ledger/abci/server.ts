/**
 * The ABCI socket server (CometBFT 0.38 speaks to it over up to four connections: consensus, mempool, query,
 * snapshot). Each connection carries length-prefixed protobuf `Request`s (frames.ts); the server answers each
 * with one `Response` in order, buffering the answers and writing them out when the client sends `Flush`
 * (or when the buffer passes 1 MiB). Requests are handled one at a time across all connections, so the
 * application never sees two calls at once. A frame over the bound, bytes that do not decode as a `Request`,
 * or a request of no known kind closes that connection with one log line naming the peer and the reason; the
 * other connections are not affected. At most `maxConnections` (default 8) are open at once; one more is
 * closed on arrival with a log line, so a local client cannot exhaust the process with idle connections.
 *
 * @example
 * ```ts
 * const server = serveAbci({ transport: "unix", path: "/tmp/app.sock" }, (req) => handle(req), { log: console.log });
 * await server.close();
 * ```
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type Request,
  RequestSchema,
  type Response,
  ResponseFlushSchema,
  ResponseSchema,
} from "./gen/tendermint/abci/types_pb.ts";
import { encodeFrame, FrameError, FrameReader } from "./frames.ts";

/** The default bound on one frame: a full block of transactions and its commit fit well inside. */
export const MAX_ABCI_FRAME_BYTES = 64 * 1024 * 1024;
/** Buffered answers are written out without waiting for `Flush` once they pass this size. */
const FLUSH_AT_BYTES = 1024 * 1024;

/** Where to listen. */
export type AbciAddress =
  | { readonly transport: "tcp"; readonly hostname: string; readonly port: number }
  | { readonly transport: "unix"; readonly path: string };

/** The application side: one answer (the `value` of a `Response`) per request; may throw to report an exception. */
export type AbciHandler = (request: Request) => Response["value"] | Promise<Response["value"]>;

/** A running ABCI server. */
export interface AbciServer {
  /** The address as CometBFT's `proxy_app` spells it (`tcp://127.0.0.1:PORT` or `unix:///path`). */
  readonly proxyApp: string;
  /** Stops accepting, closes every connection and waits for them. */
  close(): Promise<void>;
}

/**
 * The default bound on open connections: CometBFT opens four (consensus, mempool, query, snapshot); the rest
 * leaves room for a reconnect before the old connection is seen closed.
 */
export const MAX_ABCI_CONNECTIONS = 8;

/** Options of the server. */
export interface AbciServerOptions {
  readonly maxFrameBytes?: number;
  /** Connections open at once; one more is closed at once with a log line (default `MAX_ABCI_CONNECTIONS`). */
  readonly maxConnections?: number;
  readonly log?: (line: string) => void;
}

/** Starts serving ABCI at `address` with `handler`. */
export function serveAbci(
  address: AbciAddress,
  handler: AbciHandler,
  options: AbciServerOptions = {},
): AbciServer {
  const log = options.log ?? ((line: string) => console.error(line));
  const max = options.maxFrameBytes ?? MAX_ABCI_FRAME_BYTES;
  const maxConnections = options.maxConnections ?? MAX_ABCI_CONNECTIONS;
  if (address.transport === "unix") {
    try {
      Deno.removeSync(address.path); // a stale socket of a previous run
    } catch {
      // none
    }
  }
  const listener = address.transport === "tcp"
    ? Deno.listen({ transport: "tcp", hostname: address.hostname, port: address.port })
    : Deno.listen({ transport: "unix", path: address.path });
  const proxyApp = address.transport === "tcp"
    ? `tcp://${address.hostname}:${(listener.addr as Deno.NetAddr).port}`
    : `unix://${address.path}`;
  let queue: Promise<unknown> = Promise.resolve();
  /** Runs `fn` after every request already queued on any connection. */
  const serial = <T>(fn: () => T | Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => {});
    return next;
  };
  const connections = new Set<Deno.Conn>();
  const served = new Set<Promise<void>>();
  let closing = false;

  const serve = async (conn: Deno.Conn, peer: string) => {
    const reader = new FrameReader(max);
    let out: Uint8Array[] = [];
    let outBytes = 0;
    const writeOut = async () => {
      const parts = out;
      out = [];
      outBytes = 0;
      for (const p of parts) {
        let at = 0;
        while (at < p.length) at += await conn.write(p.subarray(at));
      }
    };
    try {
      for await (const chunk of conn.readable) {
        for (const frame of reader.push(chunk)) {
          let request: Request;
          try {
            request = fromBinary(RequestSchema, frame);
          } catch (e) {
            throw new FrameError(`Cannot decode request: ${(e as Error).message}`);
          }
          if (request.value.case === undefined) {
            throw new FrameError("Cannot decode request: it has no known kind");
          }
          let value: Response["value"];
          if (request.value.case === "flush") {
            value = { case: "flush", value: create(ResponseFlushSchema) };
          } else {
            value = await serial(async () => {
              try {
                return await handler(request);
              } catch (e) {
                log(`abci: ${request.value.case} failed: ${(e as Error).message}`);
                return { case: "exception", value: { error: (e as Error).message } } as Response["value"];
              }
            });
          }
          const bytes = encodeFrame(toBinary(ResponseSchema, create(ResponseSchema, { value })));
          out.push(bytes);
          outBytes += bytes.length;
          if (request.value.case === "flush" || outBytes >= FLUSH_AT_BYTES) await writeOut();
        }
      }
    } catch (e) {
      const hangUp = e instanceof Deno.errors.ConnectionReset || e instanceof Deno.errors.BrokenPipe;
      if (!closing && !hangUp) {
        const reason = e instanceof FrameError ? e.message : `connection failed: ${(e as Error).message}`;
        log(`abci: closing connection from ${peer}: ${reason}`);
      }
    } finally {
      connections.delete(conn);
      try {
        conn.close();
      } catch {
        // already closed
      }
    }
  };

  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        if (closing) {
          conn.close();
          break;
        }
        const addr = conn.remoteAddr;
        const peer = addr.transport === "tcp"
          ? `${addr.hostname}:${addr.port}`
          : address.transport === "unix"
          ? address.path
          : "unix";
        if (connections.size >= maxConnections) {
          log(
            `abci: refusing connection from ${peer}: ${connections.size} are open, bound is ${maxConnections}`,
          );
          try {
            conn.close();
          } catch {
            // already closed
          }
          continue;
        }
        connections.add(conn);
        const p = serve(conn, peer);
        served.add(p);
        p.finally(() => served.delete(p));
      }
    } catch {
      // listener closed
    }
  })();

  return {
    proxyApp,
    async close() {
      closing = true;
      try {
        listener.close();
      } catch {
        // already closed
      }
      for (const c of connections) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      await accepting;
      await Promise.all([...served]);
      if (address.transport === "unix") await Deno.remove(address.path).catch(() => {});
    },
  };
}
