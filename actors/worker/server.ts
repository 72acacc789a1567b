/**
 * A running Worker: its home, its durable actor and its HTTP API on 127.0.0.1 (bearer token):
 *
 * - `POST /operation` `{session, step, position, input}` — delivers one operation of a session; the
 *   operation id is `id({session, operation: {step, position}})`. `open` must carry `session = id(input)`;
 *   every other position needs its prerequisites finished (`invalid_transition` otherwise, nothing journaled).
 *   The answer is the journaled result `{ok:true, value}` or `{ok:false, code, message}`, byte for byte on
 *   every re-delivery; another input at the same position is `conflicting_operation` (409).
 * - `GET /object?root=R` — the bytes of a stored object; `GET /object/has?root=R` — `{has}`;
 *   `PUT /object/put?root=R` stores bytes that must hash to `R` (the sponsor relays activations and
 *   gradients between workers this way). The transport routes exact paths, so the root is a query
 *   parameter rather than a path segment.
 * - `GET /status` — account, sessions and the kernel phases run since start (`computations`).
 *
 * @example
 * ```ts
 * import { startWorker } from "./server.ts";
 * const w = await startWorker({ home: "/tmp/w1", port: 0, forge: null });
 * console.log(`listening ${w.url}`);
 * await w.close();
 * ```
 */
import { hasExactKeys, isObject, parseJson } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { isRoot } from "../../core/hex.ts";
import { MAX_OBJECT_BYTES } from "../../core/limits.ts";
import { type Home, openHome } from "../common/home.ts";
import { DurableActor } from "../runtime/durable.ts";
import { serve } from "../runtime/transport.ts";
import { SERVER_LIMITS, type ServerLimits } from "../../core/bounded_server.ts";
import { REQUIRES, workerActor } from "./actor.ts";
import { recorded } from "./journaled.ts";
import { flipFirstFloat, type Forge, forwardTarget } from "./forge.ts";
import { operationOf, type Position, POSITIONS } from "./session.ts";
import { StageCache } from "./stage_cache.ts";

/**
 * The worker's bound on the request bodies it reads at once: one maximal object (`MAX_OBJECT_BYTES`, what
 * `/object/put` accepts, so an Evaluator can send a worker a whole component such as SmolLM2's 113 MB
 * embedding) beside the server's default bound for everything else. Bodies stay bounded in bytes (320 MiB in
 * all), in count (the connection cap) and in time (the body deadline); a body that would pass the bound is
 * refused before it is read (503 `unavailable`) and nothing is stored.
 */
export const WORKER_BODY_BYTES_IN_FLIGHT = MAX_OBJECT_BYTES + SERVER_LIMITS.maxBodyBytesInFlight;

/** How a worker is started. */
export interface WorkerOptions {
  readonly home: string;
  readonly port?: number;
  readonly forge: Forge | null;
  /** Connection bounds of its HTTP API (`core/bounded_server.ts`). */
  readonly limits?: Partial<ServerLimits>;
}

/** A running worker. */
export interface Worker {
  readonly url: string;
  readonly home: Home;
  readonly actor: DurableActor;
  readonly cache: StageCache;
  close(): Promise<void>;
}

function rootParam(url: URL): string {
  const root = url.searchParams.get("root");
  if (!isRoot(root)) {
    throw new ProtocolError("bad_request", `Cannot address object: root is ${JSON.stringify(root)}`);
  }
  return root;
}

/** Opens the home, re-executes unfinished operations, and serves the API. */
export async function startWorker(options: WorkerOptions): Promise<Worker> {
  const home = await openHome(options.home);
  // A `--forge forward` worker changes the output of one block of its stage as it runs (`forwardTarget`).
  const cache = new StageCache(
    home.store,
    options.forge === "forward"
      ? (open) => {
        const target = forwardTarget(open.partition);
        return { forge: { output: (name, y) => name === target ? flipFirstFloat(y) : undefined } };
      }
      : undefined,
  );
  const actor = await DurableActor.open(home.journal, workerActor({ home, forge: options.forge, cache }));
  const ctx = { operation: (op: string) => home.journal.operation(op), state: () => null };
  const server = serve({
    token: home.token,
    ...(options.port !== undefined ? { port: options.port } : {}),
    limits: { maxBodyBytesInFlight: WORKER_BODY_BYTES_IN_FLIGHT, ...options.limits },
    routes: {
      "/operation": {
        method: "POST",
        async handle(req) {
          const v = parseJson(new TextDecoder().decode(req.body));
          if (
            !isObject(v) || !hasExactKeys(v, ["session", "step", "position", "input"]) ||
            !isRoot(v.session) ||
            typeof v.step !== "number" || !Number.isSafeInteger(v.step) ||
            !(POSITIONS as readonly unknown[]).includes(v.position) || !isObject(v.input)
          ) {
            throw new ProtocolError(
              "bad_request",
              "Cannot read operation: expected {session, step, position, input} with a known position",
            );
          }
          const { session, step } = v;
          const position = v.position as Position;
          const opId = operationOf(session, step, position);
          if (position === "open") {
            if (session !== id(v.input) || v.input.step !== step) {
              throw new ProtocolError(
                "bad_request",
                `Cannot open session: ${session} is not the id of the request`,
              );
            }
            return { body: await actor.deliver("open", opId, v.input), contentType: "application/json" };
          }
          const open = recorded(ctx, session, step, "open");
          if (open === null) {
            throw new ProtocolError(
              "invalid_transition",
              `Cannot run ${position}: session ${session} is not open`,
            );
          }
          const done = home.journal.operation(opId)?.status === "done";
          for (const before of REQUIRES[position](open.stage as number)) {
            if (!done && recorded(ctx, session, step, before) === null) {
              throw new ProtocolError(
                "invalid_transition",
                `Cannot run ${position}: ${before} has not finished`,
              );
            }
          }
          const input = { session, step, input: v.input };
          return { body: await actor.deliver(position, opId, input), contentType: "application/json" };
        },
      },
      "/object": {
        method: "GET",
        async handle(req) {
          return { body: await home.store.get(rootParam(req.url)) };
        },
      },
      "/object/has": {
        method: "GET",
        async handle(req) {
          return { body: { has: await home.store.has(rootParam(req.url)) } };
        },
      },
      "/object/put": {
        method: "PUT",
        maxBody: MAX_OBJECT_BYTES,
        async handle(req) {
          const root = rootParam(req.url);
          await home.store.putExpected(root, req.body);
          return { body: { root } };
        },
      },
      "/status": {
        method: "GET",
        handle() {
          return {
            body: {
              account: home.key.accountId,
              computations: { ...cache.computations },
              forge: options.forge,
              operations: home.journal.operations().length,
            },
          };
        },
      },
    },
  });
  return {
    url: server.url,
    home,
    actor,
    cache,
    async close() {
      await server.close();
      home.journal.close();
    },
  };
}
