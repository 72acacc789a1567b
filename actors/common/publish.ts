/**
 * Publishing the objects a challenge needs (PROTOCOL §5 `upload`, `seal`): each needed root not yet sealed
 * is uploaded in 1 MiB chunks from the first chunk the ledger does not have, then sealed. Every transaction
 * goes through the lost-acknowledgement-safe submitter under an intent derived from the claim, the challenge,
 * the root and the chunk index, so a restarted publisher resumes without signing anything twice.
 *
 * @example
 * ```ts
 * import { publishNeeded } from "./publish.ts";
 * // await publishNeeded({ chain, submitter, key, claimId, challenge, fetch: (root) => store.get(root) });
 * ```
 */
import { id } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import type { AccountKey } from "../../ledger/keys.ts";
import { uploadChunks } from "../../ledger/training/wire.ts";
import type { Submission, Submitter } from "../runtime/submit.ts";
import type { ChainClient } from "./chain.ts";
import { RetryableError } from "../../core/errors.ts";

/** The parts of a live challenge the publisher reads. */
export interface ChallengeView {
  readonly owner: string;
  readonly kind: string;
  readonly stage: number;
  readonly needed: readonly string[];
  readonly uploads: readonly { object_root: string; chunks: number }[];
  readonly sealed: readonly string[];
}

/** Submits `intent` until the chain decides it (an unknown outcome is resumed with the same bytes). */
export async function submitSettled(
  submitter: Submitter,
  intent: string,
  sign: () => Promise<Uint8Array>,
  pauseMs = 500,
): Promise<Submission> {
  for (;;) {
    try {
      const s = await submitter.submit(intent, sign);
      if (s.status === "committed" || s.status === "rejected") return s;
    } catch (e) {
      if (!(e instanceof RetryableError)) throw e;
    }
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

/** Uploads and seals every needed object not yet sealed; returns the number of transactions committed. */
export async function publishNeeded(input: {
  chain: ChainClient;
  submitter: Submitter;
  key: AccountKey;
  claimId: string;
  challenge: ChallengeView;
  fetch: (root: string) => Promise<Uint8Array | null>;
  onTx?: (what: string) => void;
}): Promise<number> {
  const { chain, submitter, key, claimId, challenge } = input;
  const tag = { claim: claimId, owner: challenge.owner, kind: challenge.kind, stage: challenge.stage };
  let count = 0;
  for (const root of challenge.needed) {
    if (challenge.sealed.includes(root)) continue;
    const bytes = await input.fetch(root);
    if (bytes === null) {
      throw new ProtocolError(
        "object_not_found",
        `Cannot publish ${root} for claim ${claimId}: no source holds it`,
      );
    }
    const chunks = uploadChunks(bytes);
    const have = challenge.uploads.find((u) => u.object_root === root)?.chunks ?? 0;
    for (let index = have; index < chunks.length; index++) {
      const s = await submitSettled(
        submitter,
        id({ ...tag, tx: "upload", root, index }),
        () =>
          chain.sign(key, "upload", { claim_id: claimId, object_root: root, index, data: chunks[index]! }),
      );
      if (s.status === "rejected") {
        throw new ProtocolError(
          "bad_request",
          `Cannot upload chunk ${index} of ${root}: ${s.code} ${s.message}`,
        );
      }
      count++;
      input.onTx?.(`upload ${root.slice(0, 12)} ${index + 1}/${chunks.length}`);
    }
    const s = await submitSettled(
      submitter,
      id({ ...tag, tx: "seal", root }),
      () => chain.sign(key, "seal", { claim_id: claimId, object_root: root }),
    );
    if (s.status === "rejected") {
      throw new ProtocolError("bad_request", `Cannot seal ${root}: ${s.code} ${s.message}`);
    }
    count++;
    input.onTx?.(`seal ${root.slice(0, 12)}`);
  }
  return count;
}
