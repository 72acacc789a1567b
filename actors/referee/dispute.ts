/**
 * The referee's dispute of one stage (PROTOCOL §5): challenge the claim (fraud on a mismatch, naming the
 * first forged block and its phase on a training stage; availability for an object nobody serves) when no
 * challenge is live; once its own fraud challenge is live, upload and
 * seal every needed object in 1 MiB chunks; once everything is sealed, `resolve`. Each call does the next
 * thing only, so the referee's pass loop drives a dispute one transaction batch at a time and a restarted
 * referee continues from the chain's state and its journaled submissions.
 *
 * @example
 * ```ts
 * import { dispute } from "./dispute.ts";
 * // await dispute(setup, submitter, claimId, 1, { verdict: "mismatch", what: "optimizer update", root: null, message: "" }, state);
 * ```
 */
import type { JsonObject } from "../../core/canonical.ts";
import { answerChunkTree, type ChallengeView, publishNeeded, submitSettled } from "../common/publish.ts";
import type { Submitter } from "../runtime/submit.ts";
import { measure, progressText } from "../../core/progress.ts";
import { fetchObject, type StageVerdict } from "./check.ts";
import type { RefereeSetup } from "./referee.ts";

/** The upload rate and ETA are shown after this long: over the first block or two of uploads they mean nothing. */
const RATE_AFTER_MS = 2_000;

/** Challenges stage `stage`, publishes what it needs and resolves (fraud); or challenges availability. */
export async function dispute(
  setup: RefereeSetup,
  submitter: Submitter,
  claimId: string,
  stage: number,
  v: StageVerdict,
  state: JsonObject,
): Promise<void> {
  const { chain, home } = setup;
  const me = home.key.accountId;
  const live = (state as { claim?: { challenge: ChallengeView | null } }).claim?.challenge ?? null;
  const fraud = v.verdict === "mismatch";
  const intent = `challenge:${claimId}:${stage}:${fraud ? "fraud" : v.root}`;
  if (live === null && submitter.record(intent)?.status !== "committed") {
    if (submitter.record(intent)?.status === "rejected") return;
    const s = await submitSettled(submitter, intent, () =>
      chain.sign(home.key, "challenge", {
        claim_id: claimId,
        stage,
        challenge_kind: fraud ? "fraud" : "availability",
        // A `chunks` challenge names the object whose committed chunk root it disputes.
        object_root: fraud && v.phase !== "chunks" ? null : v.root,
        block: fraud ? v.block ?? null : null,
        phase: fraud ? v.phase ?? null : null,
      }));
    setup.emit({
      event: "challenge",
      claim_id: claimId,
      stage,
      detail: s.status === "committed"
        ? `${fraud ? "fraud" : "availability"} (${v.what ?? v.root}${
          v.phase === "chunks"
            ? `, chunks of ${v.root}`
            : v.block === undefined
            ? ""
            : `, block ${v.block} ${v.phase}`
        })`
        : `refused: ${s.code} ${s.message}`,
    });
    return;
  }
  if (live === null || live.owner !== me || !fraud) return; // someone else's challenge, or waiting on the publisher
  // Everything left in one pipelined batch: the uploads and seals still missing, then the resolve. A training
  // claim's chunks carry their Merkle paths (its traces commit their objects' chunk roots).
  const answer = await chain.claim(claimId);
  await publishNeeded({
    chain,
    submitter,
    key: home.key,
    claimId,
    challenge: live,
    fetch: (root) => fetchObject({ chain, store: home.store, workers: setup.workers }, root),
    committed: answer
      ? answerChunkTree(answer, (live as { phase?: string | null }).phase ?? null)
      : () => false,
    extra: [{
      base: { tx: "resolve", claim: claimId, stage, owner: live.owner },
      kind: "resolve",
      fields: { claim_id: claimId },
      what: "resolve",
    }],
    onTx: (what, s) => {
      const detail = s.status === "committed"
        ? (what === "resolve" ? "committed" : what)
        : `${what} refused: ${s.code} ${s.message}`;
      setup.emit({ event: what === "resolve" ? "resolve" : "publish", claim_id: claimId, stage, detail });
    },
    onUpload: (done, total, elapsed) => {
      const m = measure(done, total, elapsed);
      const early = elapsed < RATE_AFTER_MS;
      setup.emit({
        event: "progress",
        claim_id: claimId,
        stage,
        detail: progressText("uploaded", done, total, elapsed, "bytes", RATE_AFTER_MS),
        bytes_done: done,
        bytes_total: total,
        rate: early ? null : Math.round(m.rate),
        eta_s: early || m.eta === null ? null : Math.round(m.eta),
      });
    },
  });
}
