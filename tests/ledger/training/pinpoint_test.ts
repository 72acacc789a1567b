/**
 * Pinpointed fraud challenges (PROTOCOL §5, §10.4): a forged forward output, backward gradient or optimizer
 * update on the first, a middle or the last block of a four-block stage, or on stage 0's head, is caught by
 * naming `{stage, block, phase}` and uploading exactly that block's needed objects; naming an honest block
 * loses the bond and reopens the window for the right one.
 */
import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { blocksOf } from "../../../kernels/boundary.ts";
import type { StageTrace } from "../../../kernels/trace.ts";
import { UPLOAD_CHUNK_BYTES } from "../../../core/limits.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { challenger, Net, sponsor, stranger, workers } from "./_harness.ts";
import { challengeAndUpload, fraudChallenge, type Pin, reserveAndClaim, uploadAndSeal } from "./_flow.ts";
import type { Forge } from "./_pipeline.ts";

const FEE = DEVNET_PARAMS.fee;
const BOND = DEVNET_PARAMS.claim_bond;
const CBOND = DEVNET_PARAMS.challenge_bond;
const WHAT = {
  forward: "forward output",
  backward: "backward gradient",
  update: "optimizer update",
} as const;
const FORGE = { forward: "forward", backward: "backward", update: "optimizer" } as const;

/** The check a forgery of `pin` fails: a block's forged backward is its input gradient, the head's its sum. */
function reason(pin: Pin): string {
  if (pin.phase !== "backward") return WHAT[pin.phase];
  return pin.block === "head" ? "gradient norm" : "input gradient";
}

function claimState(net: Net, claimId: string): JsonObject {
  return (net.app.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
}

/** What the protocol says block `pin.block` of `trace` needs, written out independently of the ledger. */
function expectedNeeded(net: Net, trace: StageTrace, stage: number, pin: Pin): string[] {
  const parent = net.model.manifest.components;
  if (pin.block === "head") {
    const roots = [parent.embed!, parent.norm!, trace.head_input!];
    if (pin.phase !== "forward") roots.push(trace.blocks[0]?.gradient_in ?? trace.gradient_out);
    return roots.sort();
  }
  const j = pin.block, n = trace.blocks.length;
  const roots = [
    parent[blocksOf(trace.partition)[j]!]!,
    j === 0 ? (stage === 0 ? trace.embedding! : trace.input) : trace.blocks[j - 1]!.output,
  ];
  if (pin.phase !== "forward") {
    roots.push(j === n - 1 ? trace.gradient_out : trace.blocks[j + 1]!.gradient_in);
  }
  return roots.sort();
}

function caughtByOneBlock(stage: number, pin: Pin) {
  const net = new Net();
  const forge: NonNullable<Forge> = { what: FORGE[pin.phase], stage, block: pin.block };
  const s0 = net.balance(sponsor).balance, c0 = net.balance(challenger).balance;
  const { claimId, step } = reserveAndClaim(net, { forge });
  assert.equal(claimState(net, claimId).status, "claimed", "the forgery passed the graph checks");
  const trace = step.traces[stage]!;
  const needed = challengeAndUpload(net, claimId, stage, challenger, pin);
  assert.deepEqual(needed, expectedNeeded(net, trace, stage, pin));
  const sizes = needed.map((r) => net.objects.get(r)!.length);
  const uploads = sizes.reduce((n, b) => n + Math.ceil(b / UPLOAD_CHUNK_BYTES), 0);
  const sealedBytes = needed.reduce(
    (n, r) => n + (net.app.query(`/object/${r}`) as { size: number }).size,
    0,
  );
  assert.equal(
    sealedBytes,
    sizes.reduce((a, b) => a + b, 0),
    "the uploaded bytes are the block's needed objects",
  );
  const challenge = (claimState(net, claimId).claim as { challenge: JsonObject }).challenge;
  assert.deepEqual([challenge.block, challenge.phase], [pin.block, pin.phase]);
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  const st = claimState(net, claimId);
  assert.deepEqual([st.status, st.reason], ["rejected", `mismatch: ${reason(pin)}`]);
  assert.equal(net.balance(sponsor).balance, s0 - 2 * FEE - BOND);
  // The challenge, every chunk and seal, then half the claim bond.
  assert.equal(net.balance(challenger).balance, c0 - (1 + uploads + needed.length) * FEE + BOND / 2);
  assert.equal(net.lifecycle().learning_root, net.model.root);
  net.app.close();
}

for (const phase of ["forward", "backward", "update"] as const) {
  for (const [block, where] of [[0, "first"], [2, "a middle"], [3, "last"]] as const) {
    Deno.test(`a forged ${WHAT[phase]} on the ${where} block of a four-block stage is caught by uploading that block's needed objects only`, () => {
      caughtByOneBlock(1, { block, phase });
    });
  }
  Deno.test(`a forged ${WHAT[phase]} of stage 0's head is caught by uploading the embedding, the norm and the final hidden state (and the gradient at the embedding)`, () => {
    caughtByOneBlock(0, { block: "head", phase });
  });
}

Deno.test("a challenge naming an honest block while another is forged loses its bond, the window reopens, and the right block is caught", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance, s0 = net.balance(workers[2]!).balance;
  const { claimId } = reserveAndClaim(net, { forge: { what: "optimizer", stage: 1, block: 2 } });
  const wrong = challengeAndUpload(net, claimId, 1, challenger, { block: 1, phase: "update" });
  const h = net.height;
  net.ok(net.tx(challenger, "resolve", { claim_id: claimId }));
  const st = claimState(net, claimId) as { status: string; claim: { deadline: number; challenge: null } };
  assert.deepEqual([st.status, st.claim.challenge, st.claim.deadline], [
    "claimed",
    null,
    h + DEVNET_PARAMS.challenge_blocks,
  ]);
  const chunks = wrong.reduce((n, r) => n + Math.ceil(net.objects.get(r)!.length / UPLOAD_CHUNK_BYTES), 0);
  assert.equal(net.balance(challenger).balance, c0 - (2 + chunks + wrong.length) * FEE - CBOND);
  // The honest observer names the forged block.
  const observer = workers[2]!;
  const needed = fraudChallenge(net, claimId, 1, observer, { block: 2, phase: "update" });
  for (const root of needed) uploadAndSeal(net, claimId, root, observer);
  net.ok(net.tx(observer, "resolve", { claim_id: claimId }));
  const end = claimState(net, claimId);
  assert.deepEqual([end.status, end.reason], ["rejected", "mismatch: optimizer update"]);
  const observed = needed.reduce((n, r) => n + Math.ceil(net.objects.get(r)!.length / UPLOAD_CHUNK_BYTES), 0);
  // The observer's challenge, chunks, seals and resolve, its bond back and half the claim bond.
  assert.equal(net.balance(observer).balance, s0 - (2 + observed + needed.length) * FEE + BOND / 2);
  net.app.close();
});
