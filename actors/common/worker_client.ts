/**
 * A client of a Worker's HTTP API (see `actors/worker/server.ts`), used by the sponsor and the referee, and
 * the workers file that lists them: a JSON array of `{url, token}` or `{url, token_file}` entries, plus an
 * optional `capacity` (parameters the worker holds; default: unlimited).
 *
 * @example
 * ```ts
 * import { WorkerClient } from "./worker_client.ts";
 * const w = new WorkerClient("http://127.0.0.1:8001", "ab".repeat(32));
 * // const { ok, value } = await w.operation(session, 0, "forward", { input: null });
 * ```
 */
import {
  decodeCanonical,
  isObject,
  type JsonObject,
  type JsonValue,
  parseJson,
} from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { TransportClient } from "../runtime/transport.ts";
import { loadToken } from "../runtime/token.ts";

/** A recorded operation result. */
export type OperationResult =
  | { readonly ok: true; readonly value: JsonObject }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** One entry of a workers file, resolved. */
export interface WorkerEntry {
  readonly url: string;
  readonly token: string;
  readonly capacity: number;
}

/** Reads a workers file; `bad_request` naming the first bad entry. */
export async function readWorkersFile(path: string): Promise<WorkerEntry[]> {
  let v: JsonValue;
  try {
    v = parseJson(await Deno.readTextFile(path));
  } catch (e) {
    throw new ProtocolError("bad_request", `Cannot read workers file ${path}: ${(e as Error).message}`);
  }
  if (!Array.isArray(v) || v.length === 0) {
    throw new ProtocolError("bad_request", `Cannot read workers file ${path}: expected a non-empty array`);
  }
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : ".";
  const out: WorkerEntry[] = [];
  for (const [i, e] of v.entries()) {
    if (!isObject(e) || typeof e.url !== "string" || !/^http:\/\/[^/]+$/.test(e.url.replace(/\/$/, ""))) {
      throw new ProtocolError("bad_request", `Cannot read workers file ${path}: entry ${i} has no http url`);
    }
    let token: string;
    if (typeof e.token === "string") token = e.token;
    else if (typeof e.token_file === "string") {
      token = await loadToken(e.token_file.startsWith("/") ? e.token_file : `${dir}/${e.token_file}`, {
        create: false,
      });
    } else {throw new ProtocolError(
        "bad_request",
        `Cannot read workers file ${path}: entry ${i} has no token`,
      );}
    const capacity = e.capacity === undefined ? Number.MAX_SAFE_INTEGER : e.capacity;
    if (typeof capacity !== "number" || !Number.isSafeInteger(capacity) || capacity < 1) {
      throw new ProtocolError(
        "bad_request",
        `Cannot read workers file ${path}: entry ${i} capacity is ${capacity}`,
      );
    }
    out.push({ url: e.url.replace(/\/$/, ""), token, capacity });
  }
  return out;
}

/** A client of one worker. */
export class WorkerClient {
  readonly http: TransportClient;
  constructor(readonly url: string, token: string, timeoutMs = 120_000) {
    this.http = new TransportClient(url, token, { timeoutMs });
  }

  /** Delivers one operation and returns its recorded result. */
  async operation(
    session: string,
    step: number,
    position: string,
    input: JsonObject,
  ): Promise<OperationResult> {
    const bytes = await this.http.request("POST", "/operation", { session, step, position, input });
    return decodeCanonical(bytes) as unknown as OperationResult;
  }

  /** The worker's account id, computations and operation count. */
  async status(): Promise<{ account: string; computations: Record<string, number>; operations: number }> {
    return await this.http.json("GET", "/status") as never;
  }

  /** The bytes of object `root`, checked against the root (`object_corrupt` otherwise). */
  async getObject(root: string): Promise<Uint8Array> {
    const bytes = await this.http.request("GET", `/object?root=${root}`);
    if (sha256Hex(bytes) !== root) {
      throw new ProtocolError(
        "object_corrupt",
        `Cannot fetch object ${root}: bytes hash to ${sha256Hex(bytes)}`,
      );
    }
    return bytes;
  }

  /** True when the worker has object `root` (its bytes are checked when fetched, not here). */
  async hasObject(root: string): Promise<boolean> {
    const v = await this.http.json("GET", `/object/has?root=${root}`) as { has?: unknown };
    return v.has === true;
  }

  /** Stores `bytes` on the worker under their root. */
  async putObject(bytes: Uint8Array): Promise<string> {
    const root = sha256Hex(bytes);
    await this.http.request("PUT", `/object/put?root=${root}`, bytes);
    return root;
  }
}
