/**
 * The connection-bound flags shared by every task that serves HTTP (`validator`, `worker`): each phase's
 * deadline and the connection cap of `core/bounded_server.ts`, with the defaults in the help text.
 */
import { SERVER_LIMITS, type ServerLimits } from "../core/bounded_server.ts";
import { integerOption } from "./_cli.ts";

/** The `parse` options of the flags. */
export const SERVER_FLAG_OPTIONS = {
  "max-connections": { type: "string" },
  "idle-timeout-ms": { type: "string" },
  "header-timeout-ms": { type: "string" },
  "body-timeout-ms": { type: "string" },
} as const;

/** The help lines of the flags. */
export const SERVER_FLAG_HELP =
  `  --max-connections N   open connections at most (default ${SERVER_LIMITS.maxConnections}); beyond it the
                        oldest idle or half-sent one is closed, or the new one when all are busy
  --idle-timeout-ms N   close a connection that sends nothing for N ms (default ${SERVER_LIMITS.idleTimeoutMs})
  --header-timeout-ms N a request head must be complete N ms after its first byte (default ${SERVER_LIMITS.headerTimeoutMs})
  --body-timeout-ms N   a body must be complete N ms after its head (default ${SERVER_LIMITS.bodyTimeoutMs})`;

/** The limits the flags set (absent flags keep the defaults). */
export function serverLimits(
  values: Partial<Record<keyof typeof SERVER_FLAG_OPTIONS, string>>,
): Partial<ServerLimits> {
  const pick = (flag: keyof typeof SERVER_FLAG_OPTIONS, key: keyof ServerLimits) =>
    values[flag] === undefined ? {} : { [key]: integerOption(values[flag], flag) };
  return {
    ...pick("max-connections", "maxConnections"),
    ...pick("idle-timeout-ms", "idleTimeoutMs"),
    ...pick("header-timeout-ms", "headerTimeoutMs"),
    ...pick("body-timeout-ms", "bodyTimeoutMs"),
  };
}
