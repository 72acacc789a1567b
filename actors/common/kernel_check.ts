/**
 * The startup conformance check of a role that talks to a chain (PROTOCOL §10.6): read the conformance
 * vectors the chain's genesis pins (`/vectors`) and refuse to start (`conformance_failed`, naming the vector)
 * when this process's kernels do not reproduce them. A chain not yet reachable is waited for, within a bound.
 *
 * @example
 * ```ts
 * import { checkKernelsAgainstChain } from "./kernel_check.ts";
 * // await checkKernelsAgainstChain(new ChainClient(rpc)); // throws ProtocolError("conformance_failed")
 * ```
 */
import type { JsonValue } from "../../core/canonical.ts";
import { RetryableError } from "../../core/errors.ts";
import { assertConformance } from "../../kernels/conformance.ts";
import type { ChainClient } from "./chain.ts";

/** Checks the kernels against the chain's pinned vectors; retries an unreachable chain for up to `waitMs`. */
export async function checkKernelsAgainstChain(chain: ChainClient, waitMs = 60_000): Promise<void> {
  const until = Date.now() + waitMs;
  let vectors: JsonValue;
  for (;;) {
    try {
      vectors = await chain.vectors();
      break;
    } catch (e) {
      if (!(e instanceof RetryableError) || Date.now() >= until) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  assertConformance(vectors);
}
