/**
 * The conformance vectors every genesis pins (PROTOCOL §10.6): the document `genesis/vectors/kernels.json`
 * (written by `deno task kernels:vectors`), for every genesis builder to put in its `vectors` field, and for
 * a role that reads no genesis (a Worker) to check its kernels against at startup.
 *
 * @example
 * ```ts
 * import { conformanceVectors } from "./conformance.ts";
 * const genesis = { vectors: conformanceVectors() }; // with the other genesis fields
 * ```
 */
import type { JsonObject } from "../core/canonical.ts";
import pinned from "./vectors/kernels.json" with { type: "json" };

/** A fresh copy of the pinned conformance vectors document. */
export function conformanceVectors(): JsonObject {
  return structuredClone(pinned) as JsonObject;
}
