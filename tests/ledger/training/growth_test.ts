import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { growMetadata } from "../../../ledger/training/wire.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { challenger, Net, sponsor, stranger } from "./_harness.ts";
import { challengeAndUpload, grown, growTx, reserveAndClaim } from "./_flow.ts";

const FEE = DEVNET_PARAMS.fee;
const BOND = DEVNET_PARAMS.claim_bond;

Deno.test("an identity growth settles after its window without minting and without changing the training round", () => {
  const net = new Net();
  const s0 = net.balance(sponsor).balance, issued0 = net.totals().issued;
  const g = grown(net, 2);
  const h = net.height;
  const tx = growTx(net, g);
  net.ok(tx);
  assert.equal(net.balance(sponsor).balance, s0 - FEE - BOND);
  const claim = net.lifecycle().claim as JsonObject;
  assert.deepEqual([claim.claim_id, claim.kind], [net.id(tx), "growth"]);
  net.until(h + DEVNET_PARAMS.challenge_blocks + 2);
  const l = net.lifecycle();
  assert.equal(l.learning_root, g.root);
  assert.equal(l.serving_root, net.model.root);
  assert.equal(l.training_round, 0);
  assert.deepEqual(l.period, { index: 0, steps: 0, growths: 1 });
  assert.equal(net.totals().issued, issued0);
  assert.equal(net.balance(sponsor).balance, s0 - FEE);
  // The growth budget of the period is spent.
  net.rejects(growTx(net, grown(net, 1)), "budget_exhausted");
  // Training continues from the grown model (6 blocks on two stages).
  const { height } = reserveAndClaim(net, {
    partitions: [["embed", "norm"], [
      "block_000",
      "block_001",
      "block_002",
      "block_003",
      "block_004",
      "block_005",
    ]],
  });
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  assert.equal(net.lifecycle().training_round, 1);
  net.app.close();
});

Deno.test("a forged growth is refuted with only the parent's last block uploaded", () => {
  const net = new Net();
  const s0 = net.balance(sponsor).balance, c0 = net.balance(challenger).balance;
  const issued0 = net.totals().issued;
  const g = grown(net, 2, true);
  const tx = growTx(net, g);
  net.ok(tx);
  const needed = challengeAndUpload(net, net.id(tx), 0, challenger, null);
  assert.deepEqual(needed, [net.model.manifest.components.block_003]);
  net.ok(net.tx(stranger, "resolve", { claim_id: net.id(tx) }));
  const st = (net.app.query(`/claim?id=${net.id(tx)}`) as JsonObject).state as JsonObject;
  assert.equal(st.status, "rejected");
  assert.equal(st.reason, "mismatch: growth");
  assert.equal(net.balance(sponsor).balance, s0 - FEE - BOND);
  assert.equal(net.balance(challenger).balance, c0 - 3 * FEE + BOND / 2);
  assert.equal(net.totals().issued, issued0);
  assert.equal(net.lifecycle().learning_root, net.model.root);
  net.app.close();
});

Deno.test("a growth is refused when it is not the parent plus identity blocks, cannot be placed, or comes mid-pass", () => {
  const net = new Net({ batches: 2 });
  const g = grown(net, 2);
  const mixed = {
    ...g.manifest,
    components: { ...g.manifest.components, block_005: net.model.manifest.components.block_000! },
  };
  net.rejects(growTx(net, { manifest: mixed, root: id(mixed as unknown as JsonValue) }), "invalid_model");
  net.rejects(growTx(net, { manifest: g.manifest, root: "ab".repeat(32) }), "invalid_model");
  net.rejects(growTx(net, g, [600_000]), "placement_failed");
  net.rejects(
    net.tx(sponsor, "grow", {
      parent: "cd".repeat(32),
      model_root: g.root,
      metadata: growMetadata(g.manifest),
      capacities: [2_000_000],
    }),
    "wrong_parent",
  );
  // After one paid step of two batches the pass is under way: growth waits for round 2.
  const { height } = reserveAndClaim(net);
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  assert.match(net.rejects(growTx(net, grown(net, 1)), "invalid_transition"), /start of a pass/);
  net.app.close();
});
