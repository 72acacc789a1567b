import assert from "node:assert/strict";
import { ObjectStore } from "../../../core/object_store.ts";
import { ProtocolError } from "../../../core/errors.ts";
import { WorkerClient } from "../../../actors/common/worker_client.ts";
import { runPipeline } from "../../../actors/sponsor/pipeline.ts";
import { startWorker, type Worker } from "../../../actors/worker/server.ts";
import { trainStep } from "../../../kernels/step.ts";
import { CLIP, LR, tinyBatch, tinyFixture, tinyPartitions } from "../worker/_fixture.ts";

async function workers(n: number) {
  const homes = Array.from({ length: n }, () => Deno.makeTempDirSync({ prefix: "pipeline-test-" }));
  const fixture = await tinyFixture(homes.map((h) => `${h}/objects`));
  const ws: Worker[] = [];
  for (const home of homes) ws.push(await startWorker({ home, port: 0, forge: null }));
  return {
    homes,
    fixture,
    workers: ws,
    clients: ws.map((w) => new WorkerClient(w.url, w.home.token)),
    async close() {
      for (const w of ws) await w.close();
      for (const h of homes) Deno.removeSync(h, { recursive: true });
    },
  };
}

Deno.test("a worker placed on components another worker produced gets them copied from the pool, and the step equals the reference", async () => {
  const t = await workers(3);
  try {
    const partitions = tinyPartitions(2);
    const f = t.fixture;
    const common = {
      partitions,
      learningRate: LR,
      clip: CLIP,
      chainId: "neuroshard-test",
      assignment: "a".repeat(64),
    };
    // Step 0 on workers 0 and 1: worker 1 alone holds the updated block_002.
    const s0 = await runPipeline({
      ...common,
      workers: [t.clients[0]!, t.clients[1]!],
      parent: f.manifest,
      batch: f.batch,
      step: 0,
    });
    const updated = s0.candidate.components.block_002!;
    assert.equal(await new ObjectStore(`${t.homes[2]}/objects`).has(updated), false);
    // Step 1 places stage 1 on worker 2, which has only the genesis model.
    const s1 = await runPipeline({
      ...common,
      workers: [t.clients[0]!, t.clients[2]!],
      pool: t.clients,
      parent: s0.candidate,
      batch: tinyBatch(1),
      step: 1,
    });
    assert.equal(await new ObjectStore(`${t.homes[2]}/objects`).has(updated), true);
    const r0 = trainStep({
      model: f.model,
      manifest: f.manifest,
      batch: f.batch,
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 0,
    });
    const r1 = trainStep({
      model: r0.candidate,
      manifest: r0.candidateManifest,
      batch: tinyBatch(1),
      partitions,
      learningRate: 0.05,
      clip: 1,
      step: 1,
    });
    assert.equal(s0.recordRoot, r0.recordRoot);
    assert.equal(s1.recordRoot, r1.recordRoot);
  } finally {
    await t.close();
  }
});

Deno.test("a component no worker holds fails the step with object_not_found naming it, before any operation", async () => {
  const t = await workers(2);
  try {
    const f = t.fixture;
    const missing = f.manifest.components.block_002!;
    for (const h of t.homes) await Deno.remove(`${h}/objects/${missing.slice(0, 2)}/${missing.slice(2)}`);
    await assert.rejects(
      runPipeline({
        workers: t.clients,
        partitions: tinyPartitions(2),
        parent: f.manifest,
        batch: f.batch,
        learningRate: LR,
        clip: CLIP,
        chainId: "neuroshard-test",
        assignment: "a".repeat(64),
        step: 0,
      }),
      (e: unknown) =>
        e instanceof ProtocolError && e.code === "object_not_found" && e.message.includes(missing),
    );
  } finally {
    await t.close();
  }
});
