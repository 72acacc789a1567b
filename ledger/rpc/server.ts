/**
 * The validator RPC (PROTOCOL §13) on 127.0.0.1, answering canonical JSON:
 *
 * - `POST /broadcast_tx` (body: raw envelope bytes, `Content-Type: application/json` or
 *   `application/octet-stream`, at most 2 MiB) →
 *   `{hash, check: {ok, held?, code?, message?}}` (`held: true`: journaled, waiting for the sender's lower nonces)
 * - `GET /tx?hash=<64 hex>` → `{status: "committed", height, result}` | `{status: "pending"}` | `{status: "unknown"}`
 * - `GET /block?height=N[&wait=ms]` → `{height, block, app_hash, results}` (404 `not_found` when not committed;
 *   `wait` holds the request up to 10 s for the next block, which is how replicas follow)
 * - `GET /status`, `GET /account/<id>`, `GET /validators`, `GET /supply`
 * - training: `GET /lifecycle`, `/candidate`, `/claim?id=`, `/work?identity=`, `/manifest?root=`,
 *   `/batch?root=` (canonical JSON, shapes in ledger/training/wire.ts) and `GET /object/<root>`, which answers
 *   the raw sealed bytes as `application/octet-stream`
 * - `POST /attest` (engine-internal) → `{ok: true}`, or a 400 `{ok: false, code, message}` when refused
 *
 * Anything else (unknown path, wrong method, wrong content type, oversize or malformed request) gets a 4xx
 * answer `{ok: false, code, message}` and applies nothing. Heights and waits are decimal digits only.
 * `rpcAdmit` applies the method, type and size checks to the request head, before the body is read, for the
 * bounded server (`core/bounded_server.ts`) the node serves this handler with.
 */
import { Buffer } from "node:buffer";
import { canonical, type JsonValue, parseJson } from "../../core/canonical.ts";
import { type ErrorCode, isErrorCode, ProtocolError } from "../../core/errors.ts";
import { isHex } from "../../core/hex.ts";
import { MAX_TX_BYTES } from "../../core/limits.ts";
import { type BoundedServer, serveBounded, type ServerLimits } from "../../core/bounded_server.ts";

/** What the RPC needs from a node. */
export interface RpcNode {
  broadcast(raw: Uint8Array): Promise<JsonValue>;
  tx(hash: string): Promise<JsonValue>;
  block(height: number, waitMs: number): Promise<JsonValue | null>;
  status(): JsonValue;
  query(path: string): JsonValue | null;
  attest(body: JsonValue): JsonValue;
}

/** A replica's failed forward is the proposer's fault, not the client's. */
const UPSTREAM_STATUS: Partial<Record<ErrorCode, number>> = { upstream_timeout: 504, unavailable: 503 };

/** The bound on a request body other than a transaction. */
const MAX_SMALL_BODY = 64 * 1024;

/** A canonical JSON response. */
export function answer(status: number, value: JsonValue): Response {
  return new Response(canonical(value), { status, headers: { "content-type": "application/json" } });
}

function error(status: number, code: ErrorCode, message: string): Response {
  return answer(status, { ok: false, code, message });
}

/** The answer of the RPC's server itself to a malformed, slow or oversized request. */
export function rpcRefusal(status: number, code: string, message: string): Response {
  return error(status, isErrorCode(code) ? code : "bad_request", message);
}

/** Checks a request head (method, content type, declared size); a refusal, or the body bound. */
export function rpcAdmit(head: { method: string; target: string; headers: Headers }): Response | number {
  const path = new URL(head.target, "http://x").pathname;
  if (path !== "/broadcast_tx" && path !== "/attest") return 0;
  if (head.method !== "POST") {
    return error(405, "bad_request", `Cannot serve ${path}: method is ${head.method}, expected POST`);
  }
  const type = head.headers.get("content-type");
  if (!isJsonType(type)) {
    return error(
      415,
      "bad_request",
      `Cannot serve ${path}: content type is ${
        type ?? "absent"
      }, expected application/json or application/octet-stream`,
    );
  }
  return path === "/broadcast_tx" ? MAX_TX_BYTES : MAX_SMALL_BODY;
}

/** A height or wait parameter: decimal digits only (no sign, exponent, hex or spaces), a safe integer. */
function decimal(text: string | null): number | null {
  if (text === null || !/^(0|[1-9][0-9]{0,15})$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

/** Reads a request body up to `limit` bytes; null when it is longer. */
async function readBounded(req: Request, limit: number): Promise<Uint8Array | null> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > limit) return null;
  if (!req.body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of req.body) {
    size += part.length;
    if (size > limit) return null;
    parts.push(part);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Raw envelope bytes may be labelled as JSON or as plain bytes; anything else is refused. */
function isJsonType(header: string | null): boolean {
  const type = (header ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type === "application/octet-stream";
}

function isJson(req: Request): boolean {
  return isJsonType(req.headers.get("content-type"));
}

/** Serves `node`'s RPC on 127.0.0.1:`port` (0: a free one) behind the connection bounds of PROTOCOL §13.2. */
export function serveRpc(node: RpcNode, port = 0, limits?: Partial<ServerLimits>): BoundedServer {
  return serveBounded({
    port,
    ...(limits ? { limits } : {}),
    admit: rpcAdmit,
    refusal: rpcRefusal,
    handler: rpcHandler(node),
  });
}

/** The request handler of a node's RPC. */
export function rpcHandler(node: RpcNode): (req: Request) => Promise<Response> {
  return async (req) => {
    const url = new URL(req.url);
    const path = url.pathname;
    try {
      if (path === "/broadcast_tx" || path === "/attest") {
        if (req.method !== "POST") {
          return error(405, "bad_request", `Cannot serve ${path}: method is ${req.method}, expected POST`);
        }
        if (!isJson(req)) {
          return error(
            415,
            "bad_request",
            `Cannot serve ${path}: content type is ${
              req.headers.get("content-type") ?? "absent"
            }, expected application/json or application/octet-stream`,
          );
        }
        const limit = path === "/broadcast_tx" ? MAX_TX_BYTES : MAX_SMALL_BODY;
        const body = await readBounded(req, limit);
        if (!body) return error(413, "too_large", `Cannot serve ${path}: the body exceeds ${limit} bytes`);
        if (path === "/broadcast_tx") return answer(200, await node.broadcast(body));
        const attested = node.attest(parseJson(new TextDecoder().decode(body)));
        return answer((attested as { ok?: unknown }).ok === true ? 200 : 400, attested);
      }
      if (req.method !== "GET") {
        return error(405, "bad_request", `Cannot serve ${path}: method is ${req.method}, expected GET`);
      }
      if (path === "/tx") {
        const hash = url.searchParams.get("hash");
        if (!isHex(hash, 64)) {
          return error(
            400,
            "bad_request",
            `Cannot look up transaction: hash is ${JSON.stringify(hash)}, expected 64 hex`,
          );
        }
        return answer(200, await node.tx(hash));
      }
      if (path === "/block") {
        const height = decimal(url.searchParams.get("height"));
        if (height === null || height < 1) {
          return error(
            400,
            "bad_request",
            `Cannot look up block: height is ${
              JSON.stringify(url.searchParams.get("height"))
            }, expected decimal digits of an integer >= 1`,
          );
        }
        const waitText = url.searchParams.get("wait");
        const waited = waitText === null ? 0 : decimal(waitText);
        if (waited === null) {
          return error(
            400,
            "bad_request",
            `Cannot look up block: wait is ${
              JSON.stringify(waitText)
            }, expected decimal digits of milliseconds`,
          );
        }
        const wait = Math.min(waited, 10_000);
        const block = await node.block(height, wait);
        return block === null
          ? error(404, "not_found", `Cannot look up block: height ${height} is not committed`)
          : answer(200, block);
      }
      if (path === "/status") return answer(200, node.status());
      const result = node.query(path + url.search);
      if (result !== null && path.startsWith("/object/")) {
        const bytes = Buffer.from((result as { data: string }).data, "base64");
        return new Response(bytes, { status: 200, headers: { "content-type": "application/octet-stream" } });
      }
      if (result !== null) return answer(200, result);
      return error(404, "not_found", `Cannot serve ${path}: no such path`);
    } catch (e) {
      if (e instanceof ProtocolError) return error(UPSTREAM_STATUS[e.code] ?? 400, e.code, e.message);
      return error(500, "internal_error", `Cannot serve ${path}: ${(e as Error).message}`);
    }
  };
}
