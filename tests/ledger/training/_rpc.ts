/** The RPC of an in-process test ledger on 127.0.0.1, for query tests (only the query paths are wired). */
import type { JsonObject } from "../../../core/canonical.ts";
import { rpcHandler, type RpcNode } from "../../../ledger/rpc/server.ts";
import type { Net } from "./_harness.ts";

/** Serves the RPC of an in-process training ledger on 127.0.0.1 (only the query paths are wired). */
export async function withRpc(net: Net, fn: (url: string) => Promise<void>): Promise<void> {
  const node: RpcNode = {
    broadcast: () => Promise.reject(new Error("not wired")),
    tx: () => Promise.reject(new Error("not wired")),
    block: () => Promise.resolve(null),
    status: () => net.app.info() as unknown as JsonObject,
    query: (path) => net.app.query(path),
    attest: () => ({ ok: false }),
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, rpcHandler(node));
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}
