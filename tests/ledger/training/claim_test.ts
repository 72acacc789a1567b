import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import type { StageTrace } from "../../../kernels/trace.ts";
import { id } from "../../../core/digest.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { testApp } from "../_fixture.ts";
import { signBody, type TxBody } from "../../../ledger/envelope.ts";
import { CHAIN, challenger, Net, sponsor, stranger, workers } from "./_harness.ts";
import { metadataFor } from "./_pipeline.ts";
import { claimFor, reserveAndClaim, reserveTx } from "./_flow.ts";

Deno.test("the same numerical work is paid once only, even with a different ancestry and placement", () => {
  // With lr 0 an accepted step leaves every weight as it was: the next round's parent has the same weights
  // under a new root (another ancestry), and with one batch it trains on the same batch.
  const net = new Net({ batches: 1, lr: 0 });
  const { height, step } = reserveAndClaim(net, { lr: 0 });
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  const l = net.lifecycle();
  assert.equal(l.learning_root, step.candidateRoot);
  assert.notEqual(l.learning_root, net.model.root);
  assert.deepEqual(step.candidate.components, net.model.manifest.components);
  const three = [["embed", "norm"], ["block_000", "block_001"], ["block_002", "block_003"]];
  net.ok(reserveTx(net, workers));
  const again = claimFor(net, { partitions: three, keys: workers, lr: 0 });
  assert.match(net.rejects(again.claim, "already_paid"), /was paid by claim/);
  net.app.close();
});

Deno.test("a claim is refused unless the sender owns the assignment, one receipt per stage is signed by its reserved worker and the metadata is content-addressed", () => {
  const net = new Net();
  net.ok(reserveTx(net));
  const { fields, step } = claimFor(net);
  const md = fields.metadata as JsonObject;
  net.rejects(net.tx(stranger, "claim", fields), "not_owner");
  // A receipt signed by someone who is not the reserved worker of its stage.
  const wrongSigner = claimFor(net, { keys: [workers[0]!, challenger] });
  const forged = { ...wrongSigner.fields, workers: workers.slice(0, 2).map((k) => k.accountId) };
  assert.match(net.rejects(net.tx(sponsor, "claim", forged), "invalid_receipt"), /reserved worker/);
  // A missing receipt.
  const receiptKeys = Object.keys(md).filter((k) => "receipt" in (md[k] as JsonObject));
  const fewer = { ...md };
  delete fewer[receiptKeys[0]!];
  net.rejects(net.tx(sponsor, "claim", { ...fields, metadata: fewer }), "invalid_receipt");
  // A key that is not the id of its value.
  const renamed = { ...md, ["0".repeat(64)]: md[step.recordRoot]! };
  net.rejects(net.tx(sponsor, "claim", { ...fields, metadata: renamed }), "invalid_record");
  // Metadata over 512 KiB.
  const pad = "x".repeat(600 * 1024);
  net.rejects(net.tx(sponsor, "claim", { ...fields, metadata: { ...md, [id(pad)]: pad } }), "too_large");
  // A record that fails the graph checks (another learning rate than genesis).
  const lr = claimFor(net, { lr: 0.02 });
  assert.match(net.rejects(lr.claim, "invalid_record"), /learning_rate/);
  // Another worker list than reserved.
  const swapped = { ...fields, workers: [workers[1]!.accountId, workers[0]!.accountId] };
  net.rejects(net.tx(sponsor, "claim", swapped), "invalid_workers");
  net.ok(net.tx(sponsor, "claim", fields));
  net.app.close();
});

Deno.test("a claim after the lease has expired is refused: the assignment is gone", () => {
  const net = new Net();
  const h = net.height;
  net.ok(reserveTx(net));
  const { claim } = claimFor(net);
  net.until(h + DEVNET_PARAMS.lease_blocks + 1);
  net.rejects(claim, "invalid_transition");
  net.app.close();
});

Deno.test("reserve is refused for a wrong parent or round, bad workers, while a job is live, and without training", () => {
  const net = new Net();
  const l = net.lifecycle();
  const r = (f: JsonObject) =>
    net.tx(sponsor, "reserve", {
      parent: l.learning_root as string,
      round: 0,
      workers: [workers[0]!.accountId],
      ...f,
    });
  net.rejects(r({ parent: "ab".repeat(32) }), "wrong_parent");
  net.rejects(r({ round: 1 }), "wrong_round");
  net.rejects(r({ workers: [] }), "invalid_workers");
  net.rejects(r({ workers: [workers[0]!.accountId, workers[0]!.accountId] }), "invalid_workers");
  net.rejects(r({ workers: ["02" + "00".repeat(32)] }), "invalid_workers");
  net.rejects(r({ extra: 1 }), "invalid_body");
  net.ok(r({}));
  net.rejects(
    net.tx(challenger, "reserve", {
      parent: l.learning_root as string,
      round: 0,
      workers: [workers[0]!.accountId],
    }),
    "busy",
  );
  net.app.close();
  const plain = testApp();
  const body = {
    kind: "reserve",
    chain_id: "test-chain",
    nonce: 0,
    parent: "ab".repeat(32),
    round: 0,
    workers: [],
  };
  const res = plain.finalizeBlock({
    chain_id: "test-chain",
    height: 1,
    time: plain.info().time + 1000,
    prev_app_hash: plain.info().app_hash,
    last_commit: [],
    txs: [signBody(body as TxBody, sponsor)],
  });
  assert.equal(res.results[0]!.ok === false && res.results[0]!.code, "insufficient_funds");
  plain.close();
});

Deno.test("the period budget refuses a reservation once steps_per_period steps are paid, and a new period resets it", () => {
  const net = new Net({ params: { steps_per_period: 1, period_blocks: 30 } });
  const { height } = reserveAndClaim(net);
  net.until(height + DEVNET_PARAMS.challenge_blocks + 2);
  assert.deepEqual(net.lifecycle().period, { index: 0, steps: 1, growths: 0 });
  net.rejects(reserveTx(net), "budget_exhausted");
  net.until(30);
  net.block();
  assert.deepEqual(net.lifecycle().period, { index: 1, steps: 0, growths: 0 });
  net.ok(reserveTx(net));
  net.app.close();
});

Deno.test("the lifecycle shows the assignment while reserved and the batch is training_batches[round mod n]", () => {
  const net = new Net({ batches: 2 });
  const r = reserveTx(net);
  const h = net.height;
  net.ok(r);
  const a = net.lifecycle().assignment as JsonObject;
  assert.deepEqual(a, {
    id: net.id(r),
    owner: sponsor.accountId,
    workers: workers.slice(0, 2).map((k) => k.accountId),
    data_root: id(net.batches.map((b) => id(b as never))),
    sequence_index: 0,
    batch: id(net.batches[0]! as never),
    bond: DEVNET_PARAMS.claim_bond,
    expires: h + DEVNET_PARAMS.lease_blocks,
  });
  assert.deepEqual(net.app.query(`/batch?root=${a.batch}`), net.batches[0]);
  assert.equal(net.lifecycle().claim, null);
  net.app.close();
});

Deno.test("a claim whose block-boundary commitments do not chain or whose block sums differ from the stage's is refused at claim, the state unchanged", () => {
  const net = new Net();
  net.ok(reserveTx(net));
  const { step, fields } = claimFor(net);
  const a = net.lifecycle().assignment as JsonObject;
  const edited = (change: (t: StageTrace) => StageTrace) => {
    const traces = step.traces.map((t, i) => i === 1 ? change(t) : t);
    const record = { ...step.record, traces: traces.map((t) => id(t as unknown as JsonValue)) };
    const s = { ...step, traces, record, recordRoot: id(record as unknown as JsonValue) };
    const metadata = metadataFor(s, CHAIN, a.id as string, workers.slice(0, 2));
    return net.tx(sponsor, "claim", { ...fields, record_root: s.recordRoot, metadata });
  };
  const blocks = (t: StageTrace, j: number, c: Partial<StageTrace["blocks"][number]>) =>
    t.blocks.map((b, k) => (k === j ? { ...b, ...c } : b));
  const sum = edited((t) => ({ ...t, blocks: blocks(t, 3, { norm_squared: "0x1.0000000000000p+9" }) }));
  assert.match(
    net.rejects(sum, "invalid_record"),
    /stage 1's block sums end at 0x1.0+p\+9, the stage's norm is/,
  );
  const chain = edited((t) => ({ ...t, blocks: blocks(t, 3, { output: "ef".repeat(32) }) }));
  assert.match(net.rejects(chain, "invalid_record"), /stage 1's last block output is not the stage's output/);
  const grad = edited((t) => ({ ...t, blocks: blocks(t, 0, { gradient_in: "ef".repeat(32) }) }));
  assert.match(
    net.rejects(grad, "invalid_record"),
    /first block input gradient is not the stage's gradient_in/,
  );
  const order = edited((t) => ({ ...t, blocks: blocks(t, 1, { norm_squared: "0x0.0p+0" }) }));
  assert.match(
    net.rejects(order, "invalid_record"),
    /block 1 running squared norm 0x0.0p\+0 is below the one before it/,
  );
  net.ok(net.tx(sponsor, "claim", fields));
  net.app.close();
});
