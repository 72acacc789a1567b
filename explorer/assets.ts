/**
 * The explorer's static assets: its own script and style sheet (beside this file) and the uPlot chart library
 * served from its npm package (pinned in deno.json and deno.lock), so nothing is fetched from the internet at
 * run time. Each is read once and kept.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

const FILES: Record<string, { path: () => string; type: string }> = {
  "/assets/explorer.js": {
    path: () => new URL("./assets/explorer.js", import.meta.url).pathname,
    type: "text/javascript; charset=utf-8",
  },
  "/assets/explorer.css": {
    path: () => new URL("./assets/explorer.css", import.meta.url).pathname,
    type: "text/css; charset=utf-8",
  },
  "/assets/uplot.js": {
    path: () => require.resolve("uplot/dist/uPlot.iife.min.js"),
    type: "text/javascript; charset=utf-8",
  },
  "/assets/uplot.css": {
    path: () => require.resolve("uplot/dist/uPlot.min.css"),
    type: "text/css; charset=utf-8",
  },
};

const loaded = new Map<string, Uint8Array<ArrayBuffer>>();

/** The asset at `pathname` as bytes and content type, or null when there is no such asset. */
export function asset(pathname: string): { bytes: Uint8Array<ArrayBuffer>; type: string } | null {
  const f = FILES[pathname];
  if (!f) return null;
  let bytes = loaded.get(pathname);
  if (!bytes) {
    bytes = Deno.readFileSync(f.path());
    loaded.set(pathname, bytes);
  }
  return { bytes, type: f.type };
}

/** Every asset path (the server checks they load at start, so a missing package fails early). */
export const ASSET_PATHS: readonly string[] = Object.keys(FILES);
