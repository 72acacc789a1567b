/**
 * An HTTP/1.1 server on a raw TCP listener whose every phase has a deadline, because `Deno.serve` never
 * closes a connection holding half a request head and `node:http` enforces only an idle timeout, which a
 * client trickling one byte at a time defeats. Each connection is in one phase at a time, and the deadline
 * of a phase is fixed when it starts (bytes arriving never extend it):
 *
 * - **idle**: from accept, or from the end of the previous response, to the first byte of a request
 *   (`idleTimeoutMs`; the connection is closed silently);
 * - **head**: from that first byte to the blank line ending the head, at most `maxHeaderBytes`
 *   (`headerTimeoutMs`; answered 408 and closed; an oversized head is 431);
 * - **body**: from the end of the head to the last byte of the body, `Content-Length` or chunked, at most the
 *   bound `admit` returned (`bodyTimeoutMs`; 408 and closed);
 * - **write**: sending one response (`writeTimeoutMs`; closed).
 *
 * `admit(head)` sees the method, path and headers before any body byte is read: it answers a refusal (a
 * `Response`: wrong token, path, method, type or a declared length over the bound) or the body bound. Bodies
 * being read are also bounded together (`maxBodyBytesInFlight`; over it, 503). At most `maxConnections` are
 * open; a new connection beyond the cap evicts the oldest one that is idle or still sending its head, and is
 * refused (closed at once) when every open connection is busy with a body or a handler. The handler's own
 * time is not bounded here (a long poll is a handler choosing to wait).
 *
 * @example
 * ```ts
 * const server = serveBounded({
 *   admit: () => 1024,
 *   refusal: (status, code, message) => new Response(JSON.stringify({ code, message }), { status }),
 *   handler: () => new Response("pong"),
 * });
 * await fetch(`${server.url}/ping`); // "pong"
 * await server.close();
 * ```
 */

/** The bounds of one server. */
export interface ServerLimits {
  readonly idleTimeoutMs: number;
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly writeTimeoutMs: number;
  readonly maxConnections: number;
  readonly maxHeaderBytes: number;
  readonly maxBodyBytesInFlight: number;
}

/** The default bounds. */
export const SERVER_LIMITS: ServerLimits = {
  idleTimeoutMs: 10_000,
  headerTimeoutMs: 5_000,
  bodyTimeoutMs: 10_000,
  writeTimeoutMs: 30_000,
  maxConnections: 256,
  maxHeaderBytes: 16 * 1024,
  maxBodyBytesInFlight: 64 * 1024 * 1024,
};

/** What `admit` sees of a request before its body. */
export interface RequestHead {
  readonly method: string;
  /** The request target: path and query string. */
  readonly target: string;
  readonly headers: Headers;
}

/** How a bounded server is started. */
export interface BoundedServerOptions {
  readonly hostname?: string;
  readonly port?: number;
  readonly limits?: Partial<ServerLimits>;
  /** A refusal, or the largest body this request may send. */
  admit(head: RequestHead): Response | number;
  /** The answer the server itself sends for a malformed, slow or oversized request. */
  refusal(status: number, code: string, message: string): Response;
  handler(req: Request): Response | Promise<Response>;
}

/** A running bounded server. */
export interface BoundedServer {
  readonly url: string;
  readonly port: number;
  /** Connections open now. */
  connections(): number;
  /** Stops accepting, closes idle connections, lets answers in progress finish (up to 5 s), closes the rest. */
  close(): Promise<void>;
}

type Phase = "idle" | "head" | "body" | "handler" | "write";

class Closed extends Error {}

const CRLF2 = new Uint8Array([13, 10, 13, 10]);
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** Starts the server on 127.0.0.1 (unless told otherwise). */
export function serveBounded(options: BoundedServerOptions): BoundedServer {
  const limits: ServerLimits = { ...SERVER_LIMITS, ...options.limits };
  const hostname = options.hostname ?? "127.0.0.1";
  const listener = Deno.listen({ hostname, port: options.port ?? 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const open = new Set<Connection>();
  const budget = { inFlight: 0 };
  let closing = false;

  const accepting = (async () => {
    for (;;) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch {
        return; // the listener was closed
      }
      if (closing) {
        conn.close();
        continue;
      }
      if (open.size >= limits.maxConnections) {
        const victim = [...open].find((c) => c.phase === "idle" || c.phase === "head");
        if (!victim) {
          tryClose(conn);
          continue;
        }
        victim.abort();
        open.delete(victim);
      }
      conn.setNoDelay(true); // answers go out in one write; never wait for the peer's delayed ACK
      const c = new Connection(conn, limits, options, budget, `http://${hostname}:${port}`);
      open.add(c);
      c.done.finally(() => open.delete(c));
    }
  })();

  return {
    url: `http://${hostname}:${port}`,
    port,
    connections: () => open.size,
    async close() {
      closing = true;
      listener.close();
      await accepting;
      for (const c of open) if (c.phase === "idle" || c.phase === "head") c.abort();
      const all = Promise.all([...open].map((c) => c.done));
      const late = setTimeout(() => open.forEach((c) => c.abort()), 5_000);
      await all;
      clearTimeout(late);
    },
  };
}

function tryClose(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}

/** One connection: requests one after another, each phase under its deadline. */
class Connection {
  phase: Phase = "idle";
  readonly done: Promise<void>;
  #buffer = new Uint8Array(0);
  readonly #chunk = new Uint8Array(64 * 1024);
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** How many phases this connection has entered: a deadline belongs to the phase it was set in. */
  #entered = 0;

  constructor(
    readonly conn: Deno.TcpConn,
    readonly limits: ServerLimits,
    readonly options: BoundedServerOptions,
    readonly budget: { inFlight: number },
    readonly origin: string,
  ) {
    this.done = this.#serve().catch(() => {}).finally(() => this.abort());
  }

  /** Closes the socket now (a pending read or write fails). */
  abort(): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.#closed = true;
    tryClose(this.conn);
  }

  /**
   * Enters `phase` with its deadline; on expiry `onExpiry` runs and the socket is closed.
   *
   * Expiry is decided one event-loop turn after the timer fires. When the loop stalls past a deadline (a
   * synchronous SQLite commit waiting on the disk, say), the timer and the read that beat it become ready
   * together, and the timer's callback runs first; deciding at once would close a connection whose bytes
   * arrived in time. One turn later that read's continuation has run and moved the connection on.
   */
  #enter(phase: Phase, ms: number | null, onExpiry?: () => Promise<void>): void {
    clearTimeout(this.#timer);
    const entered = ++this.#entered;
    this.phase = phase;
    if (ms === null) return;
    this.#timer = setTimeout(() => {
      this.#timer = setTimeout(() => {
        if (entered !== this.#entered) return;
        const last = onExpiry ? onExpiry() : Promise.resolve();
        const bounded = new Promise((r) => setTimeout(r, 1_000));
        Promise.race([last, bounded]).finally(() => this.abort());
      }, 0);
    }, ms);
  }

  #expire(code: string, message: string): () => Promise<void> {
    return () => this.#send(this.options.refusal(408, code, message), false).catch(() => {});
  }

  async #serve(): Promise<void> {
    for (;;) {
      this.#enter("idle", this.limits.idleTimeoutMs);
      if (this.#buffer.length === 0 && !(await this.#fill())) return;
      const headMs = this.limits.headerTimeoutMs;
      this.#enter(
        "head",
        headMs,
        this.#expire("request_timeout", `Cannot read request: head not complete after ${headMs} ms`),
      );
      const head = await this.#readHead();
      if (head === null) return;
      const keepAlive = head.keepAlive;
      const admitted = this.options.admit(head);
      if (admitted instanceof Response) {
        // The body was never read, so the connection cannot be reused.
        await this.#write(admitted, false);
        return;
      }
      const body = await this.#readBody(head, admitted);
      if (body === null) return;
      this.#enter("handler", null);
      let response: Response;
      try {
        const init: RequestInit = { method: head.method, headers: head.headers };
        if (head.method !== "GET" && head.method !== "HEAD") init.body = body as Uint8Array<ArrayBuffer>;
        response = await this.options.handler(new Request(this.origin + head.target, init));
      } catch (e) {
        response = this.options.refusal(500, "internal_error", `Cannot answer: ${(e as Error).message}`);
      } finally {
        this.budget.inFlight -= body.reserved;
      }
      await this.#write(response, keepAlive);
      if (!keepAlive) return;
    }
  }

  /** Reads more bytes into the buffer; false at end of stream. */
  async #fill(): Promise<boolean> {
    let n: number | null;
    try {
      n = await this.conn.read(this.#chunk);
    } catch {
      throw new Closed();
    }
    if (n === null) return false;
    if (this.#buffer.length === 0) {
      this.#buffer = this.#chunk.slice(0, n);
      return true;
    }
    const next = new Uint8Array(this.#buffer.length + n);
    next.set(this.#buffer);
    next.set(this.#chunk.subarray(0, n), this.#buffer.length);
    this.#buffer = next;
    return true;
  }

  #take(n: number): Uint8Array {
    const out = this.#buffer.slice(0, n);
    this.#buffer = this.#buffer.slice(n);
    return out;
  }

  async #readHead(): Promise<(RequestHead & { keepAlive: boolean }) | null> {
    let end = -1;
    for (let from = 0;;) {
      end = indexOf(this.#buffer, CRLF2, from);
      if (end >= 0) break;
      if (this.#buffer.length > this.limits.maxHeaderBytes) {
        await this.#refuse(
          431,
          "too_large",
          `Cannot read request: head exceeds ${this.limits.maxHeaderBytes} bytes`,
        );
        return null;
      }
      from = Math.max(0, this.#buffer.length - 3);
      if (!(await this.#fill())) return null;
    }
    if (end + 4 > this.limits.maxHeaderBytes) {
      await this.#refuse(
        431,
        "too_large",
        `Cannot read request: head exceeds ${this.limits.maxHeaderBytes} bytes`,
      );
      return null;
    }
    const lines = latin1.decode(this.#take(end + 4)).slice(0, -4).split("\r\n");
    const m = /^([A-Z]+) (\/[^ ]*) HTTP\/1\.([01])$/.exec(lines[0]!);
    if (!m) {
      await this.#refuse(400, "bad_request", "Cannot read request: malformed request line");
      return null;
    }
    const headers = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon <= 0) {
        await this.#refuse(400, "bad_request", "Cannot read request: malformed header line");
        return null;
      }
      try {
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      } catch {
        await this.#refuse(400, "bad_request", "Cannot read request: invalid header");
        return null;
      }
    }
    const connection = (headers.get("connection") ?? "").toLowerCase();
    const keepAlive = m[3] === "1" ? connection !== "close" : connection === "keep-alive";
    return { method: m[1]!, target: m[2]!, headers, keepAlive };
  }

  async #readBody(head: RequestHead, max: number): Promise<(Uint8Array & { reserved: number }) | null> {
    const bodyMs = this.limits.bodyTimeoutMs;
    const chunked = (head.headers.get("transfer-encoding") ?? "").toLowerCase();
    const lengthText = head.headers.get("content-length");
    if (chunked !== "" && (chunked !== "chunked" || lengthText !== null)) {
      await this.#refuse(
        400,
        "bad_request",
        "Cannot read request: only chunked transfer encoding, without a length",
      );
      return null;
    }
    if (lengthText !== null && !/^[0-9]{1,15}$/.test(lengthText)) {
      await this.#refuse(
        400,
        "bad_request",
        `Cannot read request: content-length is ${JSON.stringify(lengthText)}`,
      );
      return null;
    }
    const declared = lengthText === null ? 0 : Number(lengthText);
    if (declared > max) {
      await this.#refuse(413, "too_large", `Cannot accept body: content-length is ${declared}, limit ${max}`);
      return null;
    }
    const reserve = chunked ? max : declared;
    if (this.budget.inFlight + reserve > this.limits.maxBodyBytesInFlight) {
      await this.#refuse(
        503,
        "unavailable",
        "Cannot accept body: too many bodies are being received; retry later",
      );
      return null;
    }
    this.budget.inFlight += reserve;
    const release = () => (this.budget.inFlight -= reserve);
    if (head.headers.get("expect")?.toLowerCase() === "100-continue") {
      await this.#raw(encoder.encode("HTTP/1.1 100 Continue\r\n\r\n")).catch(() => {});
    }
    this.#enter(
      "body",
      bodyMs,
      this.#expire("request_timeout", `Cannot read body: not complete after ${bodyMs} ms`),
    );
    try {
      const body = chunked ? await this.#readChunked(max) : await this.#readExactly(declared);
      if (body === null) return (release(), null);
      return Object.assign(body, { reserved: reserve });
    } catch (e) {
      release();
      throw e;
    }
  }

  /** The next `n` bytes, read straight into one buffer of that size; null when the peer stops first. */
  async #readExactly(n: number): Promise<Uint8Array | null> {
    if (this.#buffer.length >= n) return this.#take(n);
    const out = new Uint8Array(n);
    let at = this.#buffer.length;
    out.set(this.#buffer);
    this.#buffer = new Uint8Array(0);
    while (at < n) {
      let got: number | null;
      try {
        got = await this.conn.read(out.subarray(at));
      } catch {
        throw new Closed();
      }
      if (got === null) return null;
      at += got;
    }
    return out;
  }

  async #readChunked(max: number): Promise<Uint8Array | null> {
    const parts: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      let eol = indexOf(this.#buffer, CRLF2.subarray(0, 2), 0);
      while (eol < 0) {
        if (this.#buffer.length > 64) {
          return this.#refuse(400, "bad_request", "Cannot read body: bad chunk size");
        }
        if (!(await this.#fill())) return null;
        eol = indexOf(this.#buffer, CRLF2.subarray(0, 2), 0);
      }
      const sizeText = latin1.decode(this.#take(eol + 2)).slice(0, -2).split(";")[0]!.trim();
      if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) {
        return this.#refuse(400, "bad_request", "Cannot read body: bad chunk size");
      }
      const n = parseInt(sizeText, 16);
      if (size + n > max) return this.#refuse(413, "too_large", `Cannot accept body: more than ${max} bytes`);
      const data = await this.#readExactly(n + 2);
      if (data === null) return null;
      if (n === 0) return concat(parts, size); // no trailers are accepted: the last chunk ends in CRLF
      parts.push(data.subarray(0, n));
      size += n;
    }
  }

  async #refuse(status: number, code: string, message: string): Promise<null> {
    await this.#write(this.options.refusal(status, code, message), false);
    return null;
  }

  async #write(response: Response, keepAlive: boolean): Promise<void> {
    this.#enter("write", this.limits.writeTimeoutMs);
    await this.#send(response, keepAlive);
  }

  async #send(response: Response, keepAlive: boolean): Promise<void> {
    const body = new Uint8Array(await response.arrayBuffer());
    let head = `HTTP/1.1 ${response.status} ${response.statusText}\r\n`;
    for (const [k, v] of response.headers) {
      if (k !== "content-length" && k !== "connection" && k !== "transfer-encoding") head += `${k}: ${v}\r\n`;
    }
    head += `content-length: ${body.length}\r\nconnection: ${keepAlive ? "keep-alive" : "close"}\r\n\r\n`;
    await this.#raw(concat([encoder.encode(head), body], head.length + body.length));
  }

  async #raw(bytes: Uint8Array): Promise<void> {
    let at = 0;
    while (at < bytes.length) {
      try {
        at += await this.conn.write(bytes.subarray(at));
      } catch {
        throw new Closed();
      }
    }
  }
}

function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= hay.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
