/**
 * The explorer's HTTP server on 127.0.0.1: pages rendered on the server from a `ChainSource`, a small script
 * that keeps the block list live and draws the loss chart, and the chart library's assets. It only reads: every
 * method but GET and HEAD is refused (405), and the sources it reads from have no way to write. Connections are
 * bounded like the validator's (PROTOCOL §13.2), and a request that declares a body is refused on its head
 * (413). The index is brought up to date in the background (every `syncMs`) and before each page.
 *
 * @example
 * ```ts
 * import { startExplorer } from "./server.ts";
 * import { StateSource } from "./state_source.ts";
 * const explorer = await startExplorer(StateSource.open("validator-0/state.sqlite"), { port: 0 });
 * console.log(explorer.url);
 * await explorer.close();
 * ```
 */
import { asset, ASSET_PATHS } from "./assets.ts";
import { ChainIndex, DEFAULT_BOUNDS, type IndexBounds } from "./chain_index.ts";
import { ClaimStates } from "./claim_states.ts";
import { Codecs } from "./codecs.ts";
import { type PageContext, PageError } from "./answer.ts";
import { html } from "./html.ts";
import { page } from "./layout.ts";
import { Redirect, route } from "./routes.ts";
import type { ChainSource } from "./source.ts";
import { type RequestHead, serveBounded, type ServerLimits } from "../core/bounded_server.ts";

/** How to run an explorer. */
export interface ExplorerOptions {
  /** Port on 127.0.0.1 (0 lets the system choose). */
  readonly port?: number;
  /** How often the index looks for new blocks. */
  readonly syncMs?: number;
  readonly bounds?: IndexBounds;
  /** An object store to decode prompts and answers from (read only), or null. */
  readonly objects?: string | null;
  /** Connection bounds (defaults `SERVER_LIMITS`, PROTOCOL §13.2). */
  readonly limits?: Partial<ServerLimits>;
}

/** A running explorer. */
export interface Explorer {
  readonly url: string;
  readonly index: ChainIndex;
  /** Stops the server and the background sync and closes the source. */
  close(): Promise<void>;
}

const HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
};

function plainResponse(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, {
    status,
    headers: { ...HEADERS, ...headers, "content-type": "text/plain; charset=utf-8" },
  });
}

/** 405 for any method but GET and HEAD: the explorer is read-only. */
function methodRefusal(method: string, path: string): Response | null {
  if (method === "GET" || method === "HEAD") return null;
  return plainResponse(405, `Cannot ${method} ${path}: the explorer is read-only, expected GET\n`, {
    allow: "GET, HEAD",
  });
}

/** What the bounded server checks on a request's head: the method, and that no body is declared. */
function admit(head: RequestHead): Response | number {
  const refused = methodRefusal(head.method, head.target.split("?")[0]!);
  if (refused) return refused;
  const length = head.headers.get("content-length");
  if ((length !== null && length !== "0") || head.headers.has("transfer-encoding")) {
    return plainResponse(413, "Cannot read a request body: the explorer's pages take none\n");
  }
  return 0;
}

function htmlResponse(status: number, text: string): Response {
  return new Response(text, { status, headers: { ...HEADERS, "content-type": "text/html; charset=utf-8" } });
}

/** The request handler of an explorer over `index` (exported for tests that call it without a socket). */
export function explorerHandler(
  index: ChainIndex,
  claims: ClaimStates,
  codecs: Codecs,
): (req: Request) => Promise<Response> {
  return async (req) => {
    const url = new URL(req.url);
    const refused = methodRefusal(req.method, url.pathname);
    if (refused) return refused;
    const a = asset(url.pathname);
    if (a) {
      return new Response(a.bytes, {
        headers: { ...HEADERS, "content-type": a.type, "cache-control": "max-age=3600" },
      });
    }
    try {
      const { handler, rest } = route(url.pathname);
      await index.sync();
      const ctx: PageContext = { source: index.source, index, claims, codecs, url };
      const answer = await handler(ctx, rest);
      if (answer.kind === "json") {
        return new Response(JSON.stringify(answer.body), {
          headers: { ...HEADERS, "content-type": "application/json" },
        });
      }
      return htmlResponse(200, answer.body.text);
    } catch (e) {
      if (e instanceof Redirect) {
        return new Response(null, { status: 302, headers: { ...HEADERS, location: e.location } });
      }
      const status = e instanceof PageError ? e.status : 500;
      const message = e instanceof Error ? e.message : String(e);
      const title = status === 404 ? "Not found" : status === 400 ? "Bad request" : "Error";
      return htmlResponse(status, page(index, title, html`<p class="error">${message}</p>`).text);
    }
  };
}

/** Starts an explorer over `source` on 127.0.0.1. */
export async function startExplorer(source: ChainSource, options: ExplorerOptions = {}): Promise<Explorer> {
  for (const p of ASSET_PATHS) asset(p); // a missing asset or package fails here, not on the first page
  const index = new ChainIndex(source, options.bounds ?? DEFAULT_BOUNDS);
  await index.sync();
  const claims = new ClaimStates(source);
  // Bounded like every other server of ours (PROTOCOL §13.2): a page request has no body, so any declared
  // body is refused on the head; slow, idle and surplus connections are closed by their deadlines.
  const server = serveBounded({
    port: options.port ?? 0,
    ...(options.limits ? { limits: options.limits } : {}),
    admit,
    refusal: (status, _code, message) => plainResponse(status, `${message}\n`),
    handler: explorerHandler(index, claims, new Codecs(source, options.objects ?? null)),
  });
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    if (stopped) return;
    index.sync().catch(() => {}).finally(() => {
      if (!stopped) timer = setTimeout(tick, options.syncMs ?? 1_000);
    });
  };
  timer = setTimeout(tick, options.syncMs ?? 1_000);
  return {
    url: server.url,
    index,
    async close() {
      stopped = true;
      clearTimeout(timer);
      await server.close();
      await index.sync().catch(() => {});
      source.close();
    },
  };
}
