import assert from "node:assert/strict";
import type { JsonValue } from "../../../core/canonical.ts";
import { id } from "../../../core/digest.ts";
import { RetryableError } from "../../../core/errors.ts";
import { WorkerClient } from "../../../actors/common/worker_client.ts";
import { runPipeline } from "../../../actors/sponsor/pipeline.ts";
import { operationOf } from "../../../actors/worker/session.ts";
import { CLIP, LR, referenceStep, tinyFixture, tinyPartitions } from "./_fixture.ts";
import { homeToken, startTask } from "./_process.ts";

async function setup() {
  const home = Deno.makeTempDirSync({ prefix: "worker-restart-" });
  const fixture = await tinyFixture([`${home}/objects`]);
  const partition = tinyPartitions(1)[0]!;
  const open = {
    chain_id: "neuroshard-test",
    assignment: "a".repeat(64),
    stage: 0,
    step: 0,
    partition,
    parent: fixture.manifest as unknown as JsonValue,
    batch: fixture.batch as unknown as JsonValue,
    learning_rate: LR,
  };
  return { home, fixture, partition, open, session: id(open) };
}

Deno.test("a worker killed after beginning an operation re-executes it on restart with the identical result", async () => {
  const s = await setup();
  try {
    // The second operation journaled (the forward) is begun, then the process is SIGKILLed before computing.
    const first = await startTask("worker", ["--home", s.home], { env: { NEURO_CRASH_AT: "begin:2" } });
    const client = new WorkerClient(first.url, homeToken(s.home));
    assert.equal((await client.operation(s.session, 0, "open", s.open)).ok, true);
    await assert.rejects(client.operation(s.session, 0, "forward", { input: null }), RetryableError);
    assert.equal((await first.status).signal, "SIGKILL");

    const second = await startTask("worker", ["--home", s.home]);
    try {
      const fwdOp = operationOf(s.session, 0, "forward");
      await second.waitFor(new RegExp(`^recovered ${fwdOp} done$`));
      const client2 = new WorkerClient(second.url, homeToken(s.home));
      assert.deepEqual((await client2.status()).computations, {
        forward: 1,
        head: 0,
        backward: 0,
        update: 0,
        score_head: 0,
      });
      const ref = referenceStep(s.fixture, [s.partition]);
      const fwd = await client2.operation(s.session, 0, "forward", { input: null });
      const t0 = ref.traces[0]!;
      assert.deepEqual(fwd, {
        ok: true,
        value: {
          output: t0.output,
          embedding: t0.embedding!,
          outputs: t0.blocks.map((b) => b.output),
          // The chunk roots of the boundary files the forward hashed, as the trace commits them.
          chunk_roots: Object.fromEntries(
            [t0.embedding!, ...t0.blocks.map((b) => b.output)].map((r) => [r, t0.chunk_roots[r]!]),
          ),
        },
      });
      // The recovered result is the stored one: the re-delivery computed nothing more.
      assert.equal((await client2.status()).computations.forward, 1);
      const out = await runPipeline({
        workers: [client2],
        partitions: [s.partition],
        parent: s.fixture.manifest,
        batch: s.fixture.batch,
        learningRate: LR,
        clip: CLIP,
        chainId: "neuroshard-test",
        assignment: "a".repeat(64),
        step: 0,
      });
      assert.equal(out.recordRoot, ref.recordRoot);
    } finally {
      await second.stop();
    }
  } finally {
    Deno.removeSync(s.home, { recursive: true });
  }
});

Deno.test("a worker killed after completing an operation but before replying answers the re-delivery from its journal", async () => {
  const s = await setup();
  try {
    const first = await startTask("worker", ["--home", s.home], { env: { NEURO_CRASH_AT: "complete:3" } });
    const client = new WorkerClient(first.url, homeToken(s.home));
    assert.equal((await client.operation(s.session, 0, "open", s.open)).ok, true);
    assert.equal((await client.operation(s.session, 0, "forward", { input: null })).ok, true);
    const ref = referenceStep(s.fixture, [s.partition]);
    // The head completes and is journaled; the reply is lost with the process.
    await assert.rejects(
      client.operation(s.session, 0, "head", { head_input: ref.traces[0]!.output }),
      RetryableError,
    );
    assert.equal((await first.status).signal, "SIGKILL");
    const second = await startTask("worker", ["--home", s.home]);
    try {
      const client2 = new WorkerClient(second.url, homeToken(s.home));
      const head = await client2.operation(s.session, 0, "head", { head_input: ref.traces[0]!.output });
      assert.deepEqual(head, {
        ok: true,
        value: { head_gradient: ref.traces[0]!.head_gradient!, loss: ref.traces[0]!.loss! },
      });
      assert.deepEqual((await client2.status()).computations, {
        forward: 0,
        head: 0,
        backward: 0,
        update: 0,
        score_head: 0,
      });
    } finally {
      await second.stop();
    }
  } finally {
    Deno.removeSync(s.home, { recursive: true });
  }
});
