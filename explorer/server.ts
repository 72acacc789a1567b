/**
 * The explorer's HTTP server on 127.0.0.1: pages rendered on the server from a `ChainSource`, a small script
 * that keeps the block list live and draws the loss chart, and the chart library's assets. It only reads: every
 * method but GET and HEAD is refused (405), and the sources it reads from have no way to write. The index is
 * brought up to date in the background (every `syncMs`) and before each page.
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

/** How to run an explorer. */
export interface ExplorerOptions {
  /** Port on 127.0.0.1 (0 lets the system choose). */
  readonly port?: number;
  /** How often the index looks for new blocks. */
  readonly syncMs?: number;
  readonly bounds?: IndexBounds;
  /** An object store to decode prompts and answers from (read only), or null. */
  readonly objects?: string | null;
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
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response(`Cannot ${req.method} ${url.pathname}: the explorer is read-only, expected GET\n`, {
        status: 405,
        headers: { ...HEADERS, allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" },
      });
    }
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
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: options.port ?? 0, onListen: () => {} },
    explorerHandler(index, claims, new Codecs(source, options.objects ?? null)),
  );
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = () => {
    if (stopped) return;
    index.sync().catch(() => {}).finally(() => {
      if (!stopped) timer = setTimeout(tick, options.syncMs ?? 1_000);
    });
  };
  timer = setTimeout(tick, options.syncMs ?? 1_000);
  const addr = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    index,
    async close() {
      stopped = true;
      clearTimeout(timer);
      await server.shutdown();
      await index.sync().catch(() => {});
      source.close();
    },
  };
}
