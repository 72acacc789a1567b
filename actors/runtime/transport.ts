/**
 * Loopback HTTP between actors (PROTOCOL §12): a server bound to 127.0.0.1 that requires
 * `Authorization: Bearer <token>` before it looks at anything else, bounds every body (256 KiB unless a route
 * says otherwise, e.g. object transfer), gives a slow client a fixed time to send its body, and answers errors
 * as canonical JSON `{code, message}` with the matching status. A client that maps answers back to
 * `ProtocolError` (never retry) and `RetryableError` (network, timeout, 5xx).
 *
 * Status map: 400 malformed, 401 `unauthorized` (missing or wrong token), 404 `not_found`, 405 wrong method,
 * 408 `request_timeout`, 409 `conflicting_operation`, 413 `too_large`, 500 `internal_error`,
 * 503 `unavailable` (a `RetryableError` in a handler).
 *
 * @example
 * ```ts
 * import { serve, TransportClient } from "./transport.ts";
 * const server = serve({ token: "ab".repeat(32), routes: { "/ping": { method: "GET", handle: () => ({ body: "pong" }) } } });
 * const client = new TransportClient(server.url, "ab".repeat(32));
 * await client.json("GET", "/ping"); // "pong"
 * await server.close();
 * ```
 */
import { canonicalBytes, type JsonValue, parseJson } from "../../core/canonical.ts";
import { type ErrorCode, isErrorCode, ProtocolError, RetryableError } from "../../core/errors.ts";
import { MAX_HTTP_BODY_BYTES } from "../../core/limits.ts";
import { serveBounded, type ServerLimits } from "../../core/bounded_server.ts";
import { tokensEqual } from "./token.ts";

/** A request as a route sees it: the body is already read, bounded and complete. */
export interface RouteRequest {
  readonly url: URL;
  readonly headers: Headers;
  readonly body: Uint8Array;
}

/** A route's answer: JSON values are sent as canonical JSON, bytes as they are. */
export interface Reply {
  readonly status?: number;
  readonly body: JsonValue | Uint8Array;
  /** The content type of a byte body (default `application/octet-stream`; JSON values are always JSON). */
  readonly contentType?: string;
}

/** One route. */
export interface Route {
  readonly method: "GET" | "POST" | "PUT";
  /** The largest body accepted, in bytes (default 256 KiB). */
  readonly maxBody?: number;
  handle(req: RouteRequest): Reply | Promise<Reply>;
}

/** Server options. */
export interface ServeOptions {
  readonly token: string;
  /** Routes by exact path. */
  readonly routes: Readonly<Record<string, Route>>;
  /** Port to listen on (0 = any free port, the default). */
  readonly port?: number;
  /** Address to bind (default 127.0.0.1). */
  readonly hostname?: string;
  /** How long a client may take to send its body (default 10 s). */
  readonly bodyTimeoutMs?: number;
  /** Connection bounds: idle, head and write timeouts, connection cap (`core/bounded_server.ts`). */
  readonly limits?: Partial<ServerLimits>;
}

/** A running server. */
export interface Server {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const STATUS: Partial<Record<ErrorCode, number>> = {
  unauthorized: 401,
  not_found: 404,
  object_not_found: 404,
  request_timeout: 408,
  conflicting_operation: 409,
  too_large: 413,
  internal_error: 500,
  unavailable: 503,
};

/** The HTTP status an error code is answered with (400 unless listed). */
export function statusOf(code: ErrorCode): number {
  return STATUS[code] ?? 400;
}

function errorResponse(code: ErrorCode, message: string, status = statusOf(code)): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (status === 401) headers["www-authenticate"] = "Bearer";
  return new Response(asBody(canonicalBytes({ code, message })), { status, headers });
}

/** Bytes as a fetch body (our byte arrays always sit on a plain ArrayBuffer). */
function asBody(bytes: Uint8Array): BodyInit {
  return bytes as Uint8Array<ArrayBuffer>;
}

class HttpFailure extends Error {
  constructor(readonly code: ErrorCode, message: string) {
    super(message);
  }
}

async function readBody(req: Request, max: number, timeoutMs: number): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > max) {
    throw new HttpFailure("too_large", `Cannot accept body: content-length is ${declared}, limit ${max}`);
  }
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), deadline]);
      if (next === "timeout") {
        throw new HttpFailure("request_timeout", `Cannot read body: not complete after ${timeoutMs} ms`);
      }
      if (next.done) break;
      size += next.value.length;
      if (size > max) throw new HttpFailure("too_large", `Cannot accept body: more than ${max} bytes`);
      parts.push(next.value);
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Starts a server; authentication, method, declared size and the route are checked on the request head,
 * before a body byte is read, and every phase of a connection has a deadline (`core/bounded_server.ts`).
 */
export function serve(options: ServeOptions): Server {
  const timeoutMs = options.bodyTimeoutMs ?? 10_000;
  const expected = `Bearer ${options.token}`;
  const routeOf = (target: string) => {
    const path = new URL(target, "http://x").pathname;
    return { path, route: Object.hasOwn(options.routes, path) ? options.routes[path] : undefined };
  };
  const server = serveBounded({
    ...(options.hostname !== undefined ? { hostname: options.hostname } : {}),
    port: options.port ?? 0,
    limits: { bodyTimeoutMs: timeoutMs, ...options.limits },
    refusal: (status, code, message) =>
      errorResponse(isErrorCode(code) ? code : "bad_request", message, status),
    admit(head) {
      const auth = head.headers.get("authorization");
      if (auth === null || !tokensEqual(auth, expected)) {
        return errorResponse(
          "unauthorized",
          `Cannot accept request: bearer token is ${auth === null ? "missing" : "wrong"}`,
        );
      }
      const { path, route } = routeOf(head.target);
      if (route === undefined) return errorResponse("not_found", `Cannot route request: no path ${path}`);
      if (route.method !== head.method) {
        return errorResponse(
          "bad_request",
          `Cannot route request: method is ${head.method}, expected ${route.method}`,
          405,
        );
      }
      return route.maxBody ?? MAX_HTTP_BODY_BYTES;
    },
    async handler(req) {
      const url = new URL(req.url);
      const route = routeOf(url.pathname + url.search).route!;
      try {
        const body = await readBody(req, route.maxBody ?? MAX_HTTP_BODY_BYTES, timeoutMs);
        const reply = await route.handle({ url, headers: req.headers, body });
        const bytes = reply.body instanceof Uint8Array ? reply.body : canonicalBytes(reply.body);
        return new Response(asBody(bytes), {
          status: reply.status ?? 200,
          headers: {
            "content-type": reply.body instanceof Uint8Array
              ? reply.contentType ?? "application/octet-stream"
              : "application/json",
          },
        });
      } catch (e) {
        if (e instanceof HttpFailure || e instanceof ProtocolError) return errorResponse(e.code, e.message);
        if (e instanceof RetryableError) return errorResponse("unavailable", e.message);
        return errorResponse("internal_error", `Cannot answer ${url.pathname}: ${(e as Error).message}`);
      }
    },
  });
  return {
    url: server.url,
    port: server.port,
    close: () => server.close(),
  };
}

/** A client for a transport server (or the validator RPC): answers become bytes, errors become typed errors. */
export class TransportClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | null,
    readonly options: { readonly timeoutMs?: number } = {},
  ) {}

  /** Sends a request and returns the answer's bytes; throws `ProtocolError` for 4xx, `RetryableError` otherwise. */
  async request(method: string, path: string, body?: Uint8Array | JsonValue): Promise<Uint8Array> {
    const headers: Record<string, string> = {};
    if (this.token !== null) headers.authorization = `Bearer ${this.token}`;
    let payload: Uint8Array | undefined;
    if (body !== undefined) {
      payload = body instanceof Uint8Array ? body : canonicalBytes(body);
      headers["content-type"] = body instanceof Uint8Array ? "application/octet-stream" : "application/json";
    }
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers,
        body: payload === undefined ? null : asBody(payload),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch (e) {
      throw new RetryableError(`Cannot reach ${this.baseUrl}${path}: ${(e as Error).message}`, { cause: e });
    }
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw new RetryableError(`Cannot read answer of ${path}: ${(e as Error).message}`, { cause: e });
    }
    if (res.ok) return bytes;
    const text = new TextDecoder().decode(bytes);
    let code: ErrorCode = res.status >= 500 ? "unavailable" : "bad_request";
    let message = `HTTP ${res.status} from ${path}: ${text.slice(0, 200)}`;
    try {
      const v = parseJson(text) as { code?: unknown; message?: unknown };
      if (typeof v.code === "string" && isErrorCode(v.code)) code = v.code;
      if (typeof v.message === "string") message = v.message;
    } catch { /* not JSON: keep the raw text in the message */ }
    if (res.status >= 500 || res.status === 408) throw new RetryableError(`${code}: ${message}`);
    throw new ProtocolError(code, message);
  }

  /** Like `request`, parsing the answer as JSON. */
  async json(method: string, path: string, body?: Uint8Array | JsonValue): Promise<JsonValue> {
    return parseJson(new TextDecoder().decode(await this.request(method, path, body)));
  }
}
