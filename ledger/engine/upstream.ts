/**
 * A replica's calls to its proposer, each with a deadline: a proposer that accepts a connection and never
 * answers makes the call fail with `upstream_timeout` (answered 504 by the RPC) instead of holding the
 * replica's client forever. Before following, `assertReachable` checks that this process may connect to the
 * proposer at all: `--follow http://localhost:…` under `--allow-net=127.0.0.1` would otherwise fail on every
 * retry, forever.
 *
 * @example
 * ```ts
 * assertReachable("http://127.0.0.1:26657");
 * const res = await callUpstream("http://127.0.0.1:26657/status", {}, 10_000);
 * ```
 */
import { ProtocolError } from "../../core/errors.ts";

/** How long a forwarded request may wait for the proposer by default. */
export const UPSTREAM_TIMEOUT_MS = 10_000;

/** Throws `permission_denied` when this process's permissions do not let it connect to `url`. */
export function assertReachable(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ProtocolError("bad_request", `Cannot follow ${url}: not a URL`);
  }
  if (parsed.protocol !== "http:") {
    throw new ProtocolError(
      "bad_request",
      `Cannot follow ${url}: protocol is ${parsed.protocol}, expected http:`,
    );
  }
  const host = `${parsed.hostname}:${parsed.port || "80"}`;
  const state = Deno.permissions.querySync({ name: "net", host }).state;
  if (state !== "granted") {
    throw new ProtocolError(
      "permission_denied",
      `Cannot follow ${url}: net access to ${host} is ${state} for this process (the validator task may reach 127.0.0.1 only)`,
    );
  }
}

/** `fetch` with a deadline covering the answer's body; fails with `upstream_timeout` or `unavailable`. */
export async function callUpstream(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(url, { ...init, signal });
    return { status: res.status, text: await res.text() };
  } catch (e) {
    if (signal.aborted) {
      throw new ProtocolError(
        "upstream_timeout",
        `Cannot forward to ${url}: no answer within ${timeoutMs} ms`,
      );
    }
    throw new ProtocolError("unavailable", `Cannot forward to ${url}: ${(e as Error).message}`);
  }
}
