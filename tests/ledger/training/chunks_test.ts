/**
 * Chunk trees at `upload` (PROTOCOL §5 "Chunk trees", §10.4 "Chunk roots"): a training claim's traces commit
 * the chunk root of every object a dispute can upload, each chunk is checked against it along its Merkle
 * path, and a committed chunk root that is not the object's tree is fraud of its own, proven by a `chunks`
 * challenge whose uploads carry no paths — so a claimer's bad tree can never block a challenger.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { JsonObject } from "../../../core/canonical.ts";
import { chunkPath, chunkRoot } from "../../../core/chunk_tree.ts";
import { uploadChunks } from "../../../ledger/training/wire.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { challenger, Net, sponsor, stranger } from "./_harness.ts";
import { chunksFields, fraudChallenge, liveChallenge, reserveAndClaim, uploadAndSeal } from "./_flow.ts";

const FEE = DEVNET_PARAMS.fee;
const BOND = DEVNET_PARAMS.claim_bond;
const CBOND = DEVNET_PARAMS.challenge_bond;
const MiB = 1048576;

function claimState(net: Net, claimId: string): JsonObject {
  return (net.app.query(`/claim?id=${claimId}`) as JsonObject).state as JsonObject;
}

const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");

Deno.test("a chunk that does not hash to the committed chunk root along its path is refused at upload with chunk_mismatch, the state unchanged", () => {
  const net = new Net();
  const { claimId } = reserveAndClaim(net);
  fraudChallenge(net, claimId, 0, challenger, { block: "head", phase: "forward" });
  const root = net.model.manifest.components.embed!;
  const embed = net.objects.get(root)!;
  assert.equal(uploadChunks(embed).length, 3); // 2 MiB and a bit: three chunks, three different paths
  const up = (index: number, chunk: Uint8Array, path: unknown) =>
    net.tx(
      challenger,
      "upload",
      { claim_id: claimId, object_root: root, index, data: b64(chunk), path } as never,
    );
  const first = embed.subarray(0, MiB);
  const tampered = first.slice();
  tampered[MiB - 1]! ^= 1;
  assert.match(net.rejects(up(0, tampered, chunkPath(embed, 0)), "chunk_mismatch"), /committed [0-9a-f]{64}/);
  net.rejects(up(0, first, chunkPath(embed, 1)), "chunk_mismatch"); // another chunk's path
  net.rejects(up(0, embed.subarray(MiB, 2 * MiB), chunkPath(embed, 1)), "chunk_mismatch"); // chunk 1 as chunk 0
  assert.match(
    net.rejects(up(0, first, chunkPath(embed, 0).slice(1)), "invalid_upload"),
    /path is not 8 roots/,
  );
  assert.match(net.rejects(up(0, first, []), "invalid_upload"), /path is not 8 roots/);
  assert.match(net.rejects(up(0, first, "ab".repeat(32)), "invalid_upload"), /path is not 8 roots/);
  // The true chunks along their paths are accepted, one by one; the object seals.
  net.ok(up(0, first, chunkPath(embed, 0)));
  net.rejects(up(1, tampered, chunkPath(embed, 1)), "chunk_mismatch");
  net.ok(up(1, embed.subarray(MiB, 2 * MiB), chunkPath(embed, 1)));
  net.ok(up(2, embed.subarray(2 * MiB), chunkPath(embed, 2)));
  net.ok(net.tx(challenger, "seal", { claim_id: claimId, object_root: root }));
  assert.deepEqual(liveChallenge(net).sealed, [root]);
  net.app.close();
});

Deno.test("a claimer's wrong chunk root cannot block a challenger: its honest chunks are refused, but a chunks challenge uploads the object without paths and gets the claim rejected with the slash", () => {
  // The trace commits a wrong chunk root for stage 1's parent block_000 (the numbers are honest).
  const forge = { what: "chunks" as const, object: () => net.model.manifest.components.block_000! };
  let net = new Net();
  const root = net.model.manifest.components.block_000!;
  const bytes = net.objects.get(root)!;
  {
    const { claimId, step } = reserveAndClaim(net, { forge });
    assert.notEqual(step.traces[1]!.chunk_roots[root], chunkRoot(bytes));
    // A block challenge needing that component: its true chunks along their true paths are refused.
    assert.deepEqual(
      fraudChallenge(net, claimId, 1, challenger, { block: 0, phase: "update" }).includes(root),
      true,
    );
    const up = net.tx(challenger, "upload", {
      claim_id: claimId,
      object_root: root,
      index: 0,
      data: b64(bytes.subarray(0, MiB)),
      path: chunkPath(bytes, 0),
    });
    net.rejects(up, "chunk_mismatch");
    net.app.close();
  }
  net = new Net();
  const s0 = net.balance(sponsor).balance, c0 = net.balance(challenger).balance;
  const issued0 = net.totals().issued;
  const { claimId } = reserveAndClaim(net, { forge });
  // Malformed chunks challenges, each refused with the state unchanged.
  const bad = (fields: JsonObject) =>
    net.rejects(net.tx(challenger, "challenge", fields), "invalid_challenge");
  bad({ ...chunksFields(claimId, 1, root), block: 0 });
  bad({ ...chunksFields(claimId, 1, root), object_root: null });
  bad(chunksFields(claimId, 1, "ab".repeat(32))); // no stage commits it
  bad(chunksFields(claimId, 0, root)); // stage 0 does not name stage 1's component
  bad(chunksFields(claimId, 2, root)); // no stage 2
  net.ok(net.tx(challenger, "challenge", chunksFields(claimId, 1, root)));
  const c = liveChallenge(net) as { needed: string[]; phase: string; object_root: string; block: null };
  assert.deepEqual([c.needed, c.phase, c.object_root, c.block], [[root], "chunks", root, null]);
  // Its uploads carry no path (the committed tree is what is disputed).
  net.rejects(
    net.tx(challenger, "upload", {
      claim_id: claimId,
      object_root: root,
      index: 0,
      data: b64(bytes.subarray(0, MiB)),
      path: chunkPath(bytes, 0),
    }),
    "invalid_upload",
  );
  uploadAndSeal(net, claimId, root, challenger);
  const txs = 1 + uploadChunks(bytes).length + 1; // challenge, chunks, seal
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  const st = claimState(net, claimId);
  assert.equal(st.status, "rejected");
  assert.equal(st.reason, "mismatch: chunk root");
  assert.equal(net.totals().issued, issued0, "nothing is minted");
  assert.equal(net.balance(sponsor).balance, s0 - 2 * FEE - BOND);
  assert.equal(net.balance(challenger).balance, c0 - txs * FEE + BOND / 2);
  assert.equal(net.lifecycle().learning_root, net.model.root);
  net.app.close();
});

Deno.test("a chunks challenge of a right chunk root loses its bond and reopens the window", () => {
  const net = new Net();
  const c0 = net.balance(challenger).balance;
  const { claimId } = reserveAndClaim(net);
  const root = net.model.manifest.components.block_002!;
  net.ok(net.tx(challenger, "challenge", chunksFields(claimId, 1, root)));
  uploadAndSeal(net, claimId, root, challenger);
  const h = net.height;
  net.ok(net.tx(stranger, "resolve", { claim_id: claimId }));
  const st = claimState(net, claimId) as { status: string; claim: { challenge: null; deadline: number } };
  assert.equal(st.status, "claimed");
  assert.equal(st.claim.challenge, null);
  assert.equal(st.claim.deadline, h + DEVNET_PARAMS.challenge_blocks);
  const txs = 1 + uploadChunks(net.objects.get(root)!).length + 1;
  assert.equal(net.balance(challenger).balance, c0 - txs * FEE - CBOND);
  net.app.close();
});
