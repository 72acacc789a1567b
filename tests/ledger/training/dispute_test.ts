import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { challenger, Net, sponsor, stranger } from "./_harness.ts";
import {
  challengeAndUpload,
  chunksFields,
  fraudChallenge,
  fraudFields,
  liveChallenge,
  type Pin,
  reserveAndClaim,
  uploadAndSeal,
} from "./_flow.ts";
import type { Forge } from "./_pipeline.ts";
import { chunkPath } from "../../../core/chunk_tree.ts";

const FEE = DEVNET_PARAMS.fee;
const BOND = DEVNET_PARAMS.claim_bond;
const CBOND = DEVNET_PARAMS.challenge_bond;
const HEAD: Pin = { block: "head", phase: "forward" };

function claimState(net: Net, claimId: string): JsonObject {
  return (net.app.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
}

function forgedIsRejected(forge: NonNullable<Forge>, stage: number, pin: Pin, reason: string) {
  const net = new Net();
  const s0 = net.balance(sponsor).balance, c0 = net.balance(challenger).balance;
  const issued0 = net.totals().issued, burned0 = net.totals().burned;
  const { claimId, step } = reserveAndClaim(net, { forge });
  // The forgery passed the graph checks: the claim is pending.
  assert.equal(claimState(net, claimId).status, "claimed");
  const needed = challengeAndUpload(net, claimId, stage, challenger, pin);
  assert.equal(claimState(net, claimId).status, "resolving");
  const txs = 1 + needed.reduce((n, r) => n + Math.ceil(net.objects.get(r)!.length / 1048576) + 1, 0);
  const resolve = net.tx(stranger, "resolve", { claim_id: claimId });
  net.ok(resolve);
  const st = claimState(net, claimId);
  assert.equal(st.status, "rejected");
  assert.equal(st.reason, `mismatch: ${reason}`);
  assert.equal(net.totals().issued, issued0, "nothing is minted");
  assert.equal(net.balance(sponsor).balance, s0 - 2 * FEE - BOND);
  assert.equal(net.balance(challenger).balance, c0 - txs * FEE + BOND / 2);
  // Fees of reserve, claim, the challenger's txs and the resolve, and the unpaid half of the bond.
  assert.equal(net.totals().burned - burned0, (3 + txs) * FEE + BOND / 2);
  const l = net.lifecycle();
  assert.equal(l.learning_root, net.model.root);
  assert.notEqual(l.learning_root, step.candidateRoot);
  assert.equal(l.training_round, 0);
  assert.equal(l.claim, null);
  net.app.close();
}

Deno.test("a forged optimizer update passes the graph checks and is rejected after challenge, upload, seal and resolve; half the bond to the challenger, half burned, nothing minted", () => {
  forgedIsRejected({ what: "optimizer", stage: 1 }, 1, { block: 3, phase: "update" }, "optimizer update");
});

Deno.test("a forged forward output (stage 0, its 2 MiB embedding uploaded in 3 chunks) is rejected naming the forward output", () => {
  forgedIsRejected({ what: "forward", stage: 0 }, 0, { block: "head", phase: "forward" }, "forward output");
});

Deno.test("a forged input gradient is rejected naming the input gradient", () => {
  forgedIsRejected({ what: "backward", stage: 1 }, 1, { block: 0, phase: "backward" }, "input gradient");
});

Deno.test("a forged loss on stage 0 is rejected naming the head loss", () => {
  forgedIsRejected({ what: "loss", stage: 0 }, 0, { block: "head", phase: "forward" }, "head loss");
});

Deno.test("a forged head gradient on stage 0 is rejected naming the head gradient", () => {
  forgedIsRejected({ what: "head", stage: 0 }, 0, { block: "head", phase: "forward" }, "head gradient");
});

Deno.test("a forged squared gradient norm is rejected naming the gradient norm", () => {
  forgedIsRejected({ what: "norm", stage: 1 }, 1, { block: 3, phase: "backward" }, "gradient norm");
});

Deno.test("a failed accusation burns the challenger's bond and reopens the window; the honest claim is then accepted", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance;
  const { claimId, step } = reserveAndClaim(net);
  const needed = challengeAndUpload(net, claimId, 1, challenger);
  const h = net.height;
  net.ok(net.tx(challenger, "resolve", { claim_id: claimId }));
  const st = claimState(net, claimId) as { status: string; claim: { deadline: number; challenge: null } };
  assert.equal(st.status, "claimed");
  assert.equal(st.claim.challenge, null);
  assert.equal(st.claim.deadline, h + DEVNET_PARAMS.challenge_blocks);
  assert.equal(net.balance(challenger).balance, c0 - (2 + 2 * needed.length) * FEE - CBOND);
  net.until(h + DEVNET_PARAMS.challenge_blocks + 2);
  assert.equal(net.lifecycle().learning_root, step.candidateRoot);
  net.app.close();
});

Deno.test("resolve before every needed object is sealed fails with not_sealed and changes nothing", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net, { forge: { what: "optimizer", stage: 1 } });
  const needed = fraudChallenge(net, claimId, 1, challenger, { block: 3, phase: "update" });
  assert.equal(needed.length, 3); // the block, its input activation and its incoming gradient
  uploadAndSeal(net, claimId, needed[0]!, challenger);
  net.rejects(net.tx(stranger, "resolve", { claim_id: claimId }), "not_sealed");
  net.app.close();
});

Deno.test("only the publisher uploads; chunks are consecutive, all but the last exactly 1 MiB, data strict base64 of 1 B-1 MiB", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  const needed = fraudChallenge(net, claimId, 0, challenger, HEAD);
  const embed = net.objects.get(net.model.manifest.components.embed!)!;
  assert.ok(needed.includes(net.model.manifest.components.embed!));
  const root = net.model.manifest.components.embed!;
  const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
  const MiB = 1048576;
  const big = (bytes: Uint8Array) => {
    let s = "";
    for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
    return btoa(s);
  };
  const up = (key: typeof challenger, index: number, data: string) =>
    net.tx(key, "upload", {
      claim_id: claimId,
      object_root: root,
      index,
      data,
      path: chunkPath(embed, index),
    });
  assert.match(net.rejects(up(stranger, 0, big(embed.subarray(0, MiB))), "not_owner"), /publisher is/);
  assert.match(net.rejects(up(sponsor, 0, big(embed.subarray(0, MiB))), "not_owner"), /publisher is/);
  net.rejects(up(challenger, 1, big(embed.subarray(MiB, 2 * MiB))), "invalid_upload"); // not consecutive
  net.rejects(up(challenger, 0, big(embed.subarray(0, MiB + 1))), "invalid_upload"); // over 1 MiB
  net.rejects(up(challenger, 0, "AAE"), "invalid_upload"); // not strict base64
  net.rejects(up(challenger, 0, ""), "invalid_upload"); // empty
  // A short first chunk is not leaf 0 of the committed tree (the machine's rule that only the last chunk may be
  // short is tested in tests/workflows/); the true first chunk is.
  net.rejects(up(challenger, 0, b64(embed.subarray(0, 100))), "chunk_mismatch");
  net.ok(up(challenger, 0, big(embed.subarray(0, MiB))));
  net.rejects(
    net.tx(challenger, "upload", {
      claim_id: claimId,
      object_root: "ab".repeat(32),
      index: 0,
      data: "AA==",
      path: [],
    }),
    "invalid_upload",
  ); // not a needed object
  net.app.close();
});

Deno.test("a sealed object whose bytes do not hash to its root is refused with seal_mismatch", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  // A chunks challenge's uploads carry no paths (the committed tree is what it disputes): only the seal checks.
  const root = net.model.manifest.components.block_000!;
  net.ok(net.tx(challenger, "challenge", chunksFields(claimId, 1, root)));
  const wrong = net.objects.get(root)!.slice();
  wrong[0]! ^= 1;
  net.ok(net.tx(challenger, "upload", {
    claim_id: claimId,
    object_root: root,
    index: 0,
    data: btoa(Array.from(wrong, (b) => String.fromCharCode(b)).join("")),
    path: [],
  }));
  net.rejects(net.tx(challenger, "seal", { claim_id: claimId, object_root: root }), "seal_mismatch");
  net.rejects(
    net.tx(challenger, "seal", { claim_id: claimId, object_root: "cd".repeat(32) }),
    "invalid_upload",
  );
  net.app.close();
});

Deno.test("a sealed object is served by /object/<root> byte for byte", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  fraudChallenge(net, claimId, 0, challenger, HEAD);
  const root = net.model.manifest.components.embed!;
  assert.equal(net.app.query(`/object/${root}`), null);
  uploadAndSeal(net, claimId, root, challenger);
  const answer = net.app.query(`/object/${root}`) as { root: string; size: number; data: string };
  assert.equal(answer.size, 2097248);
  assert.deepEqual(Uint8Array.from(atob(answer.data), (c) => c.charCodeAt(0)), net.objects.get(root));
  net.app.close();
});

Deno.test("an unanswered availability challenge rejects the claim at its deadline with the slash", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance, issued0 = net.totals().issued;
  const { claimId, step } = reserveAndClaim(net);
  const object = step.traces[1]!.output;
  const h = net.height;
  net.ok(
    net.tx(challenger, "challenge", {
      claim_id: claimId,
      stage: 1,
      challenge_kind: "availability",
      object_root: object,
      block: null,
      phase: null,
    }),
  );
  assert.deepEqual(liveChallenge(net).needed, [object]);
  net.until(h + DEVNET_PARAMS.availability_blocks + 1);
  assert.equal(claimState(net, claimId).status, "challenged");
  net.block();
  const st = claimState(net, claimId);
  assert.equal(st.status, "rejected");
  assert.equal(st.reason, "availability challenge unanswered");
  assert.equal(net.balance(challenger).balance, c0 - FEE + BOND / 2);
  assert.equal(net.totals().issued, issued0);
  net.app.close();
});

Deno.test("an answered availability challenge refunds the challenger and reopens the window", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance;
  const { claimId, step } = reserveAndClaim(net);
  const object = step.traces[1]!.gradient_in!;
  net.rejects(
    net.tx(challenger, "challenge", {
      claim_id: claimId,
      stage: 1,
      challenge_kind: "availability",
      object_root: "ee".repeat(32),
      block: null,
      phase: null,
    }),
    "invalid_challenge",
  );
  net.ok(
    net.tx(challenger, "challenge", {
      claim_id: claimId,
      stage: 1,
      challenge_kind: "availability",
      object_root: object,
      block: null,
      phase: null,
    }),
  );
  net.rejects(
    net.tx(challenger, "upload", {
      claim_id: claimId,
      object_root: object,
      index: 0,
      data: "AA==",
      path: [],
    }),
    "not_owner",
  ); // the claim owner publishes an availability answer
  const h = net.height;
  uploadAndSeal(net, claimId, object, sponsor);
  const st = claimState(net, claimId) as { status: string; claim: { deadline: number } };
  assert.equal(st.status, "claimed");
  assert.equal(st.claim.deadline, h + DEVNET_PARAMS.challenge_blocks);
  assert.equal(net.balance(challenger).balance, c0 - FEE);
  const served = net.app.query(`/object/${object}`) as { size: number };
  assert.equal(served.size, net.objects.get(object)!.length);
  net.app.close();
});

Deno.test("a fraud challenger who never resolves loses its bond at the deadline and the window reopens", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance, burned0 = net.totals().burned;
  const { claimId } = reserveAndClaim(net);
  const h = net.height;
  fraudChallenge(net, claimId, 1, challenger);
  const deadline = liveChallenge(net).deadline as number;
  assert.equal(deadline, h + DEVNET_PARAMS.availability_blocks);
  net.until(deadline + 2);
  const st = claimState(net, claimId) as { status: string; claim: { deadline: number; challenge: null } };
  assert.equal(st.status, "claimed");
  assert.equal(st.claim.challenge, null);
  assert.equal(st.claim.deadline, deadline + 1 + DEVNET_PARAMS.challenge_blocks);
  assert.equal(net.balance(challenger).balance, c0 - FEE - CBOND);
  assert.equal(net.totals().burned - burned0, 3 * FEE + CBOND);
  net.app.close();
});

Deno.test("at the absolute claim deadline an unfinished dispute refunds the publisher and burns the challenger's bond", () => {
  const net = new Net({ params: { max_claim_blocks: 15, availability_blocks: 40 } });
  const s0 = net.balance(sponsor).balance, c0 = net.balance(challenger).balance;
  const issued0 = net.totals().issued;
  const { claimId, height } = reserveAndClaim(net);
  fraudChallenge(net, claimId, 1, challenger);
  net.until(height + 15 + 1);
  assert.equal(claimState(net, claimId).status, "challenged");
  net.block();
  assert.equal(claimState(net, claimId).status, "expired");
  assert.equal(net.balance(sponsor).balance, s0 - 2 * FEE);
  assert.equal(net.balance(challenger).balance, c0 - FEE - CBOND);
  assert.equal(net.totals().issued, issued0);
  assert.equal(net.lifecycle().claim, null);
  assert.equal(net.lifecycle().training_round, 0);
  net.app.close();
});

Deno.test("a second challenge while one is live, a challenge of an unknown claim or kind and of a stage that does not exist are refused", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  const ch = (stage: number, key = challenger, pin: Pin | null = { block: 0, phase: "update" }) =>
    net.tx(key, "challenge", fraudFields(claimId, stage, pin));
  net.rejects(ch(2), "invalid_challenge");
  net.rejects(
    net.tx(challenger, "challenge", {
      claim_id: claimId,
      stage: 0,
      challenge_kind: "lazy",
      object_root: null,
      block: null,
      phase: null,
    }),
    "invalid_challenge",
  );
  net.rejects(
    net.tx(challenger, "challenge", {
      claim_id: "ab".repeat(32),
      stage: 0,
      challenge_kind: "fraud",
      object_root: null,
      block: null,
      phase: null,
    }),
    "invalid_transition",
  );
  net.ok(ch(1));
  net.rejects(ch(0, stranger, HEAD), "invalid_transition");
  net.app.close();
});

Deno.test("a fraud challenge of a training stage must name one of its blocks and a phase; every refusal leaves the state unchanged", () => {
  const net = new Net({ params: { challenge_blocks: 40, min_inference_blocks: 50 } }); // a refusal costs a block
  const { claimId, step } = reserveAndClaim(net);
  const ch = (stage: number, block: unknown, phase: unknown) =>
    net.tx(challenger, "challenge", { ...fraudFields(claimId, stage, null), block, phase } as JsonObject);
  const refused = (stage: number, block: unknown, phase: unknown, message: RegExp) =>
    assert.match(net.rejects(ch(stage, block, phase), "invalid_challenge"), message);
  refused(1, null, null, /block is null and phase null, expected a block of the stage and a phase/);
  refused(1, 0, null, /expected a block of the stage and a phase|is not a block and phase/);
  refused(1, 4, "update", /block 4 phase "update" is not a block and phase of stage 1/); // stage 1 has 4 blocks
  refused(1, -1, "forward", /is not a block and phase of stage 1/);
  refused(1, 2 ** 53 - 1, "forward", /is not a block and phase of stage 1/);
  refused(1, "head", "forward", /"head" phase "forward" is not a block and phase of stage 1/);
  refused(0, 0, "forward", /block 0 phase "forward" is not a block and phase of stage 0/); // stage 0 has no blocks
  refused(1, 0, "sideways", /phase "sideways" is not a block and phase of stage 1/);
  refused(1, "0", "update", /is not a block and phase of stage 1/);
  // An availability challenge names no block.
  assert.match(
    net.rejects(
      net.tx(challenger, "challenge", {
        claim_id: claimId,
        stage: 1,
        challenge_kind: "availability",
        object_root: step.traces[1]!.output,
        block: 0,
        phase: "forward",
      }),
      "invalid_challenge",
    ),
    /expected null and null/,
  );
  assert.equal(liveChallenge(net), null);
  net.app.close();
});
