/**
 * Serving a durable actor over the loopback transport: `POST /deliver` with the canonical body
 * `{"handler":..,"input":..,"op_id":..}` delivers an operation and answers its recorded result bytes;
 * `POST /query` with `{"input":..,"name":..}` runs a query. Authentication, size and time bounds are the
 * transport's, checked before anything is journaled.
 *
 * @example
 * ```ts
 * import { serveActor } from "./actor_http.ts";
 * // const server = serveActor(actor, { token });
 * // POST {server.url}/deliver  {"handler":"work","input":{"n":1},"op_id":"..."}
 * ```
 */
import { hasExactKeys, isObject, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { DurableActor } from "./durable.ts";
import { serve, type ServeOptions, type Server } from "./transport.ts";

function body(bytes: Uint8Array, keys: readonly string[]) {
  const v = parseJson(new TextDecoder().decode(bytes));
  if (!isObject(v) || !hasExactKeys(v, keys)) {
    throw new ProtocolError("bad_request", `Cannot read request: expected exactly ${keys.join(", ")}`);
  }
  return v;
}

/** Starts an HTTP server for `actor` (127.0.0.1, bearer token, bounded bodies). */
export function serveActor(actor: DurableActor, options: Omit<ServeOptions, "routes">): Server {
  return serve({
    ...options,
    routes: {
      "/deliver": {
        method: "POST",
        async handle(req) {
          const v = body(req.body, ["handler", "op_id", "input"]);
          if (typeof v.handler !== "string" || typeof v.op_id !== "string") {
            throw new ProtocolError("bad_request", "Cannot read request: handler and op_id must be strings");
          }
          // The recorded result bytes, exactly as journaled (canonical JSON).
          return { body: await actor.deliver(v.handler, v.op_id, v.input!), contentType: "application/json" };
        },
      },
      "/query": {
        method: "POST",
        handle(req) {
          const v = body(req.body, ["name", "input"]);
          if (typeof v.name !== "string") {
            throw new ProtocolError("bad_request", "Cannot read request: name must be a string");
          }
          return { body: actor.query(v.name, v.input!) };
        },
      },
    },
  });
}
