import assert from "node:assert/strict";
import { WorkerClient } from "../../../actors/common/worker_client.ts";
import { runScorePipeline, type ScoreTask } from "../../../actors/sponsor/score_pipeline.ts";
import { startWorker, type Worker } from "../../../actors/worker/server.ts";
import type { Forge } from "../../../actors/worker/forge.ts";
import { ObjectStore } from "../../../core/object_store.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { checkScore } from "../../../kernels/score_check.ts";
import { scoreRecord } from "../../../kernels/score_record.ts";
import { replayScore, scoreNeeded } from "../../../kernels/score_referee.ts";
import { tinyFixture, tinyPartitions } from "../worker/_fixture.ts";

/** Four one-row windows of 8 tokens with 5, 3, 7 and 1 targets. */
const WINDOWS: Batch[] = [5, 3, 7, 1].map((k, w) => {
  const ids = Array.from({ length: 8 }, (_, t) => (5 * w + 9 * t + 1) % 64);
  return { input_ids: [ids], labels: [ids.map((_, t) => (t < k ? ids[t + 1]! : -100))] };
});

const TASK: ScoreTask = {
  evaluation_id: "e".repeat(64),
  side: "candidate",
  role: "fresh",
  offset: 8,
  attempt: 0,
};

async function workers(forges: (Forge | null)[]) {
  const homes = forges.map(() => Deno.makeTempDirSync({ prefix: "score-pipeline-test-" }));
  const fixture = await tinyFixture(homes.map((h) => `${h}/objects`));
  const ws: Worker[] = [];
  for (let i = 0; i < homes.length; i++) {
    ws.push(await startWorker({ home: homes[i]!, port: 0, forge: forges[i]! }));
  }
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

Deno.test("a score across two workers is the reference record byte for byte; a re-delivery recomputes nothing", async () => {
  const t = await workers([null, null]);
  try {
    const partitions = tinyPartitions(2), f = t.fixture;
    const input = {
      workers: t.clients,
      partitions,
      manifest: f.manifest,
      modelRoot: f.root,
      windows: WINDOWS,
      chainId: "neuroshard-test",
      score: TASK,
    };
    const s = await runScorePipeline(input);
    const reference = scoreRecord(f.model, f.root, WINDOWS, partitions);
    assert.equal(s.recordRoot, reference.recordRoot);
    assert.deepEqual(s.head, reference.head);
    assert.deepEqual(s.head.targets, [5, 3, 7, 1]);
    assert.equal(
      checkScore(s.record, s.traces, s.head, f.manifest, { model_root: f.root, windows: WINDOWS }).ok,
      true,
    );
    assert.deepEqual(
      Object.keys(s.metadata).sort(),
      [s.recordRoot, ...s.record.traces, s.record.head].sort(),
    );
    const before = t.workers.map((w) => ({ ...w.cache.computations }));
    const again = await runScorePipeline(input);
    assert.equal(again.recordRoot, s.recordRoot);
    assert.deepEqual(t.workers.map((w) => ({ ...w.cache.computations })), before);
    assert.equal(before[0]!.score_head, 1);
  } finally {
    await t.close();
  }
});

Deno.test("a worker started with --forge score halves the losses at offset 0: the record passes the graph checks and the head referee refutes it", async () => {
  const t = await workers(["score", null]);
  try {
    const partitions = tinyPartitions(2), f = t.fixture;
    const s = await runScorePipeline({
      workers: t.clients,
      partitions,
      manifest: f.manifest,
      modelRoot: f.root,
      windows: WINDOWS,
      chainId: "neuroshard-test",
      score: { ...TASK, offset: 0 },
    });
    const honest = scoreRecord(f.model, f.root, WINDOWS, partitions);
    assert.deepEqual(s.head.losses, honest.computed.losses.map((x) => toHexFloat(x / 2)));
    assert.equal(
      checkScore(s.record, s.traces, s.head, f.manifest, { model_root: f.root, windows: WINDOWS }).ok,
      true,
    );
    const store = new ObjectStore(`${t.homes[0]}/objects`);
    const objects = new Map<string, Uint8Array>();
    for (const root of scoreNeeded(f.manifest, s.traces, s.head, 2)) objects.set(root, await store.get(root));
    const v = replayScore({
      manifest: f.manifest,
      record: s.record,
      traces: s.traces,
      head: s.head,
      windows: WINDOWS,
      stage: 2,
      fetch: (r) => objects.get(r),
    });
    assert.equal(v.verdict === "mismatch" && v.what, "window loss");
    // The partitions themselves are honest, and the forger's later windows too.
    assert.deepEqual(s.traces, honest.traces);
    const later = await runScorePipeline({
      workers: t.clients,
      partitions,
      manifest: f.manifest,
      modelRoot: f.root,
      windows: WINDOWS,
      chainId: "neuroshard-test",
      score: { ...TASK, offset: 4 },
    });
    assert.deepEqual(later.head, honest.head);
  } finally {
    await t.close();
  }
});
