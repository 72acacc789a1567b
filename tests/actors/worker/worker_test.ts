import assert from "node:assert/strict";
import { canonical, type JsonValue } from "../../../core/canonical.ts";
import { ObjectStore } from "../../../core/object_store.ts";
import { ProtocolError, RetryableError } from "../../../core/errors.ts";
import { replayStage } from "../../../kernels/referee.ts";
import { checkRecord } from "../../../kernels/trace.ts";
import { WorkerClient } from "../../../actors/common/worker_client.ts";
import { runPipeline } from "../../../actors/sponsor/pipeline.ts";
import type { Forge } from "../../../actors/worker/forge.ts";
import { startWorker, type Worker } from "../../../actors/worker/server.ts";
import { operationOf } from "../../../actors/worker/session.ts";
import { CLIP, type Fixture, LR, referenceStep, tinyFixture, tinyPartitions } from "./_fixture.ts";

const CHAIN = "neuroshard-test";
const ASSIGNMENT = "a".repeat(64);

async function startWorkers(n: number, forges: (Forge | null)[] = []) {
  const homes = Array.from({ length: n }, () => Deno.makeTempDirSync({ prefix: "worker-test-" }));
  const fixture = await tinyFixture(homes.map((h) => `${h}/objects`));
  const workers: Worker[] = [];
  for (let i = 0; i < n; i++) {
    workers.push(await startWorker({ home: homes[i]!, port: 0, forge: forges[i] ?? null }));
  }
  const clients = workers.map((w) => new WorkerClient(w.url, w.home.token));
  const close = async () => {
    for (const w of workers) await w.close();
    for (const h of homes) Deno.removeSync(h, { recursive: true });
  };
  return { homes, fixture, workers, clients, close };
}

function pipeline(f: Fixture, clients: WorkerClient[], partitions: string[][]) {
  return runPipeline({
    workers: clients,
    partitions,
    parent: f.manifest,
    batch: f.batch,
    learningRate: LR,
    clip: CLIP,
    chainId: CHAIN,
    assignment: ASSIGNMENT,
    step: 0,
  });
}

Deno.test("a step driven across three workers equals the in-process step byte for byte, with one receipt per worker", async () => {
  const t = await startWorkers(3);
  try {
    const partitions = tinyPartitions(3);
    assert.deepEqual(partitions, [["embed", "norm", "block_000"], ["block_001"], ["block_002"]]);
    const out = await pipeline(t.fixture, t.clients, partitions);
    const ref = referenceStep(t.fixture, partitions);
    assert.equal(out.recordRoot, ref.recordRoot);
    assert.equal(
      canonical(out.traces as unknown as JsonValue),
      canonical(ref.traces as unknown as JsonValue),
    );
    assert.equal(
      canonical(out.candidate as unknown as JsonValue),
      canonical(ref.candidateManifest as unknown as JsonValue),
    );
    assert.equal(out.loss, ref.loss);
    assert.deepEqual(out.receipts.map((r) => r.public_key), t.workers.map((w) => w.home.key.accountId));
    assert.deepEqual(out.receipts.map((r) => r.receipt.trace_root), ref.record.traces);
    assert.equal(Object.keys(out.metadata).length, 2 + 2 * 3);
    // Every activation, gradient, component, trace and the batch of the step is in some worker's store
    // (the record and the candidate manifest are the sponsor's: they go into the claim metadata).
    for (const root of ref.objects.keys()) {
      if (root === ref.recordRoot || root === ref.candidateRoot) continue;
      const held = await Promise.all(t.homes.map((h) => new ObjectStore(`${h}/objects`).has(root)));
      assert.ok(held.includes(true), `object ${root} is held by no worker`);
    }
  } finally {
    await t.close();
  }
});

Deno.test("a repeated delivery returns the stored result without recomputation", async () => {
  const t = await startWorkers(2);
  try {
    const partitions = tinyPartitions(2);
    const first = await pipeline(t.fixture, t.clients, partitions);
    const counts = t.workers.map((w) => ({ ...w.cache.computations }));
    assert.deepEqual(counts[0], { forward: 1, head: 1, backward: 1, update: 1, score_head: 0 });
    assert.deepEqual(counts[1], { forward: 1, head: 0, backward: 1, update: 1, score_head: 0 });
    const ops = t.workers.map((w) => w.home.journal.operations().length);
    const again = await pipeline(t.fixture, t.clients, partitions);
    assert.equal(again.recordRoot, first.recordRoot);
    assert.equal(canonical(again.receipts), canonical(first.receipts));
    assert.deepEqual(t.workers.map((w) => ({ ...w.cache.computations })), counts);
    assert.deepEqual(t.workers.map((w) => w.home.journal.operations().length), ops);
  } finally {
    await t.close();
  }
});

Deno.test("a different operation at the same session, step and position is conflicting_operation and journals nothing", async () => {
  const t = await startWorkers(2);
  try {
    const out = await pipeline(t.fixture, t.clients, tinyPartitions(2));
    const session = Object.values(t.workers[1]!.home.journal.operations()).find((o) => o.handler === "open")!;
    const sessionId = JSON.parse(new TextDecoder().decode(session.result!)).value.session as string;
    const before = t.workers[1]!.home.journal.operations().length;
    await assert.rejects(
      t.clients[1]!.operation(sessionId, 0, "forward", { input: "b".repeat(64) }),
      (e: unknown) => e instanceof ProtocolError && e.code === "conflicting_operation",
    );
    assert.equal(t.workers[1]!.home.journal.operations().length, before);
    // The recorded forward is unchanged: re-delivering the original input answers the original output.
    const fwd = await t.clients[1]!.operation(sessionId, 0, "forward", { input: out.traces[1]!.input });
    const t1 = out.traces[1]!;
    assert.deepEqual(fwd, {
      ok: true,
      value: {
        output: t1.output,
        embedding: null,
        outputs: t1.blocks.map((b) => b.output),
        chunk_roots: Object.fromEntries(t1.blocks.map((b) => [b.output, t1.chunk_roots[b.output]!])),
      },
    });
  } finally {
    await t.close();
  }
});

Deno.test("an operation before its prerequisites is invalid_transition and journals nothing", async () => {
  const t = await startWorkers(1);
  try {
    const w = t.clients[0]!;
    await assert.rejects(
      w.operation("c".repeat(64), 0, "forward", { input: null }),
      (e: unknown) => e instanceof ProtocolError && e.code === "invalid_transition",
    );
    const f = t.fixture;
    const open = {
      chain_id: CHAIN,
      assignment: ASSIGNMENT,
      stage: 0,
      step: 0,
      partition: tinyPartitions(1)[0]!,
      parent: f.manifest as unknown as JsonValue,
      batch: f.batch as unknown as JsonValue,
      learning_rate: LR,
    };
    const { id } = await import("../../../core/digest.ts");
    const session = id(open);
    assert.equal((await w.operation(session, 0, "open", open)).ok, true);
    await assert.rejects(
      w.operation(session, 0, "backward", { gradient_out: "d".repeat(64) }),
      (e: unknown) =>
        e instanceof ProtocolError && e.code === "invalid_transition" &&
        /head has not finished/.test(e.message),
    );
    assert.equal(t.workers[0]!.home.journal.operations().length, 1);
    assert.equal(t.workers[0]!.home.journal.operation(operationOf(session, 0, "backward")), null);
    // An open whose session is not the id of the request is refused.
    await assert.rejects(
      w.operation("e".repeat(64), 0, "open", open),
      (e: unknown) => e instanceof ProtocolError && e.code === "bad_request",
    );
  } finally {
    await t.close();
  }
});

Deno.test("a worker missing a component answers unavailable naming it, records no answer, and opens once the component arrives", async () => {
  const t = await startWorkers(1);
  try {
    const f = t.fixture;
    const block = f.manifest.components.block_000!;
    const path = `${t.homes[0]}/objects/${block.slice(0, 2)}/${block.slice(2)}`;
    const bytes = await Deno.readFile(path);
    await Deno.remove(path);
    const open = {
      chain_id: CHAIN,
      assignment: ASSIGNMENT,
      stage: 0,
      step: 0,
      partition: tinyPartitions(1)[0]!,
      parent: f.manifest as unknown as JsonValue,
      batch: f.batch as unknown as JsonValue,
      learning_rate: LR,
    };
    const session = (await import("../../../core/digest.ts")).id(open);
    const w = t.clients[0]!;
    await assert.rejects(
      w.operation(session, 0, "open", open),
      (e: unknown) =>
        e instanceof RetryableError && e.message.includes(`object_not_found`) &&
        e.message.includes(`component block_000 (${block})`),
    );
    // Begun, not answered: a missing object is never recorded as the operation's final answer.
    assert.equal(t.workers[0]!.home.journal.operation(operationOf(session, 0, "open"))?.status, "begun");
    await w.putObject(bytes);
    const r = await w.operation(session, 0, "open", open);
    assert.equal(r.ok, true);
  } finally {
    await t.close();
  }
});

for (
  const [forge, what, stage] of [
    ["optimizer", "optimizer update", 1],
    ["forward", "forward output", 1],
    ["backward", "input gradient", 1],
    ["backward", "gradient norm", 0],
  ] as const
) {
  Deno.test(`a worker forging its ${forge} on stage ${stage} passes the graph checks and is caught only by replay (${what})`, async () => {
    const forges: (Forge | null)[] = [null, null];
    forges[stage] = forge;
    const t = await startWorkers(2, forges);
    try {
      const partitions = tinyPartitions(2);
      const out = await pipeline(t.fixture, t.clients, partitions);
      const ref = referenceStep(t.fixture, partitions);
      assert.notEqual(out.recordRoot, ref.recordRoot);
      assert.deepEqual(
        checkRecord(out.record, out.traces, t.fixture.manifest, out.candidate, {
          learning_rate: 0.05,
          clip: 1,
        }),
        { ok: true },
      );
      const stores = t.homes.map((h) => new ObjectStore(`${h}/objects`));
      const bytes = new Map<string, Uint8Array>();
      for (const s of stores) {
        for (const tr of out.traces) {
          for (
            const root of [
              tr.input,
              tr.output,
              tr.gradient_out,
              tr.head_input,
              ...Object.values(t.fixture.manifest.components),
            ]
          ) {
            if (typeof root === "string" && !bytes.has(root) && await s.has(root)) {
              bytes.set(root, await s.get(root));
            }
          }
        }
      }
      const verdicts = out.traces.map((trace, i) =>
        replayStage({
          parent: t.fixture.manifest,
          batch: t.fixture.batch,
          stage: i,
          trace,
          fetch: (r) => bytes.get(r),
        })
      );
      for (let i = 0; i < 2; i++) {
        const v = verdicts[i]!;
        if (i === stage) assert.equal(v.verdict === "mismatch" ? v.what : v.verdict, what);
        else assert.deepEqual(verdicts[i], { verdict: "match" });
      }
    } finally {
      await t.close();
    }
  });
}

Deno.test("a worker with more open sessions than it keeps in memory rebuilds evicted stages from its journal, same bytes", async () => {
  const t = await startWorkers(1);
  try {
    const { MAX_OPEN_STAGES } = await import("../../../actors/worker/stage_cache.ts");
    const { id } = await import("../../../core/digest.ts");
    const f = t.fixture;
    const partition = tinyPartitions(1)[0]!;
    const w = t.clients[0]!;
    const n = MAX_OPEN_STAGES + 2;
    const sessions = Array.from({ length: n }, (_, step) => {
      const open = {
        chain_id: CHAIN,
        assignment: ASSIGNMENT,
        stage: 0,
        step,
        partition,
        parent: f.manifest as unknown as JsonValue,
        batch: f.batch as unknown as JsonValue,
        learning_rate: LR,
      };
      return { open, session: id(open), step };
    });
    const value = async (s: (typeof sessions)[0], position: string, input: Record<string, JsonValue>) => {
      const r = await w.operation(s.session, s.step, position, input);
      assert.equal(r.ok, true, JSON.stringify(r));
      return r.ok ? r.value : {};
    };
    // Each phase runs for every session before the next phase, so every stage is evicted in between.
    for (const s of sessions) await value(s, "open", s.open);
    const outputs = [];
    for (const s of sessions) outputs.push((await value(s, "forward", { input: null })).output as string);
    const heads = [];
    for (const [i, s] of sessions.entries()) heads.push(await value(s, "head", { head_input: outputs[i]! }));
    const norms = [];
    for (const [i, s] of sessions.entries()) {
      norms.push(
        (await value(s, "backward", { gradient_out: heads[i]!.head_gradient! })).norm_squared as string,
      );
    }
    const traces = [];
    for (const [i, s] of sessions.entries()) {
      traces.push((await value(s, "update", { norms: [norms[i]!], clip: CLIP })).trace);
    }
    for (const [step, trace] of traces.entries()) {
      assert.equal(
        canonical(trace!),
        canonical(referenceStep(f, [partition], step).traces[0] as unknown as JsonValue),
      );
    }
    // The rebuilds re-ran earlier phases: more kernel runs than one per phase and session.
    const c = t.workers[0]!.cache.computations;
    assert.ok(c.forward > n && c.head > n, JSON.stringify(c));
    assert.equal(c.update, n);
  } finally {
    await t.close();
  }
});

Deno.test("a worker serves its objects to token holders only, and stores relayed bytes only under their own root", async () => {
  const t = await startWorkers(1);
  try {
    const w = t.clients[0]!;
    const root = t.fixture.manifest.components.norm!;
    assert.equal(await w.hasObject(root), true);
    assert.equal(await w.hasObject("0".repeat(64)), false);
    assert.equal(
      (await w.getObject(root)).length,
      (await new ObjectStore(`${t.homes[0]}/objects`).get(root)).length,
    );
    const stranger = new WorkerClient(t.workers[0]!.url, "ab".repeat(32));
    await assert.rejects(
      stranger.getObject(root),
      (e: unknown) => e instanceof ProtocolError && e.code === "unauthorized",
    );
    const bytes = new TextEncoder().encode("relayed activation");
    const r = await w.putObject(bytes);
    assert.deepEqual(await w.getObject(r), bytes);
    await assert.rejects(
      w.http.request("PUT", `/object/put?root=${"1".repeat(64)}`, bytes),
      (e: unknown) => e instanceof ProtocolError && e.code === "object_corrupt",
    );
    assert.equal(await w.hasObject("1".repeat(64)), false);
  } finally {
    await t.close();
  }
});
