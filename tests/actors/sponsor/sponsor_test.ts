import assert from "node:assert/strict";
import { ChainClient } from "../../../actors/common/chain.ts";
import { trainStep } from "../../../kernels/step.ts";
import { place } from "../../../kernels/placement.ts";
import { BATCHES, capacities, runSponsor, startNetwork } from "./_network.ts";
import { TINY } from "../worker/_fixture.ts";

Deno.test("a sponsor with two workers settles two steps on a real validator; each is paid once, to the reserved workers", async () => {
  const net = await startNetwork({ workers: 2 });
  try {
    const chain = new ChainClient(net.rpc);
    const run = await runSponsor(net, ["--steps", "2"]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^done 2 settled, 2\/6 attempts$/m);
    assert.match(run.stdout, /^step 0 settled height=\d+ loss=0x/m);
    assert.match(run.stdout, /^step 1 settled height=\d+ loss=0x/m);
    // The chain trained exactly the reference steps: the learning root is the second step's candidate.
    const partitions = place(TINY, capacities(2));
    const f = net.fixture;
    const s0 = trainStep({
      model: f.model,
      manifest: f.manifest,
      batch: BATCHES[0]!,
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 0,
    });
    const s1 = trainStep({
      model: s0.candidate,
      manifest: s0.candidateManifest,
      batch: BATCHES[1]!,
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 1,
    });
    const lc = await chain.lifecycle();
    assert.equal(lc.training_round, 2);
    assert.equal(lc.learning_root, s1.candidateRoot);
    assert.equal(lc.serving_root, f.root);
    // 1,000,000 atoms minted per step: 800,000 split between the two reserved workers.
    for (const w of net.accounts.workers) assert.equal((await chain.account(w)).balance, 2 * 400_000);
    // Running the sponsor again for the same two steps does nothing: no attempt, no transaction.
    const again = await runSponsor(net, ["--steps", "2"]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^done 2 settled, 2\/6 attempts$/m);
    assert.equal((await chain.lifecycle()).training_round, 2);
  } finally {
    await net.close();
  }
});
