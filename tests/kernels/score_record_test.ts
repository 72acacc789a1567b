import assert from "node:assert/strict";
import type { JsonValue } from "../../core/canonical.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { toHexFloat } from "../../core/hex_float.ts";
import type { Batch } from "../../kernels/batch.ts";
import { PRESETS } from "../../kernels/config.ts";
import { buildManifest, componentFiles } from "../../kernels/manifest.ts";
import { initModel } from "../../kernels/model.ts";
import { place } from "../../kernels/placement.ts";
import { readValue, writeValue } from "../../kernels/safetensors.ts";
import { checkScore, type ScoreExpect } from "../../kernels/score_check.ts";
import { type ScoreProof, scoreRecord } from "../../kernels/score_record.ts";
import { replayScore, scoreNeeded } from "../../kernels/score_referee.ts";
import { trainStep } from "../../kernels/step.ts";
import { TINY_PARTITIONS, variedModel } from "./_generation_fixture.ts";
import { TOKENIZER_ROOT } from "./_tiny.ts";

const fx = variedModel(2);

/** A one-row window of 10 tokens: a 4-token prompt (−100), `answer` targets, EOS padding (−100). */
function window(seed: number, answer: number): Batch {
  const ids = Array.from({ length: 10 }, (_, t) => (seed * 7 + t * 5) % 32);
  const labels = ids.map((_, t) => (t >= 3 && t < 3 + answer ? ids[t + 1]! : -100));
  return { input_ids: [ids], labels: [labels] };
}

const WINDOWS = [window(1, 6), window(2, 3), window(3, 1), window(4, 5)];

function expect(overrides: Partial<ScoreExpect> = {}): ScoreExpect {
  return { model_root: fx.root, windows: WINDOWS, ...overrides };
}

function prove(claimed: { losses?: number[] } = {}): ScoreProof {
  return scoreRecord(fx.model, fx.root, WINDOWS, TINY_PARTITIONS, claimed);
}

function graph(p: ScoreProof, e = expect()): string {
  const r = checkScore(p.record, p.traces, p.head, fx.manifest, e);
  return r.ok ? "ok" : r.message;
}

/** Every stage's verdict, each fetching only what its challenge would have sealed. */
function verdicts(p: ScoreProof, objects?: Map<string, Uint8Array>): string[] {
  const all = objects ?? new Map([...fx.objects, ...p.objects]);
  return [0, 1, 2].map((stage) => {
    const needed = scoreNeeded(fx.manifest, p.traces, p.head, stage);
    const v = replayScore({
      manifest: fx.manifest,
      record: p.record,
      traces: p.traces,
      head: p.head,
      windows: WINDOWS,
      stage,
      fetch: (r) => needed.includes(r) ? all.get(r) : undefined,
    });
    return v.verdict === "mismatch" ? v.what : v.verdict;
  });
}

/** A proof with its head replaced (and the record's head id with it). */
function withHead(p: ScoreProof, edit: Partial<ScoreProof["head"]>): ScoreProof {
  const head = { ...p.head, ...edit };
  const record = { ...p.record, head: id(head as unknown as JsonValue) };
  return { ...p, head, record };
}

Deno.test("score record: each window's loss equals the training step's loss on that window, bit for bit", () => {
  const p = prove();
  for (let b = 0; b < WINDOWS.length; b++) {
    const step = trainStep({
      model: fx.model,
      manifest: fx.manifest,
      batch: WINDOWS[b]!,
      partitions: TINY_PARTITIONS,
      learningRate: 0.01,
      clip: 1,
      step: 0,
    });
    assert.equal(Object.is(p.computed.losses[b], step.loss), true, `window ${b}`);
    assert.equal(p.head.losses[b], toHexFloat(step.loss));
  }
  assert.deepEqual(p.head.targets, [6, 3, 1, 5]);
  assert.equal(
    p.record.input,
    id({ input_ids: WINDOWS.map((w) => w.input_ids[0]!), labels: WINDOWS.map((w) => w.labels[0]!) }),
  );
  assert.deepEqual(p.record.windows, WINDOWS.map((w) => id(w as unknown as JsonValue)));
});

Deno.test("score record: the devnet model's window losses equal its training step's forward losses", () => {
  const model = initModel(PRESETS.devnet, 1);
  const roots = Object.fromEntries(Object.entries(componentFiles(model)).map(([n, b]) => [n, sha256Hex(b)]));
  const manifest = buildManifest(model.config, roots, {
    origin: { kind: "init", seed: 1 },
    tokenizer_root: TOKENIZER_ROOT,
  });
  const partitions = place(PRESETS.devnet, [700_000, 1_000_000]);
  const row = (k: number): Batch => {
    const ids = Array.from({ length: 24 }, (_, t) => (k * 131 + t * 17) % PRESETS.devnet.vocab_size);
    return { input_ids: [ids], labels: [ids.map((_, t) => (t >= 8 && t < 23 ? ids[t + 1]! : -100))] };
  };
  const windows = [row(1), row(2), row(3), row(4)];
  const p = scoreRecord(model, id(manifest as unknown as JsonValue), windows, partitions);
  windows.forEach((w, b) => {
    const step = trainStep({ model, manifest, batch: w, partitions, learningRate: 0.01, clip: 1, step: 0 });
    assert.equal(p.head.losses[b], toHexFloat(step.loss), `window ${b}`);
  });
});

Deno.test("score record: an honest record passes the graph checks and every stage replays as a match", () => {
  const p = prove();
  assert.equal(graph(p), "ok");
  assert.equal(p.traces.length, 2);
  assert.equal(p.head.input, p.traces[1]!.output);
  assert.deepEqual(verdicts(p), ["match", "match", "match"]);
  // Fewer than four windows (the last score of a group).
  const q = scoreRecord(fx.model, fx.root, WINDOWS.slice(0, 3), TINY_PARTITIONS);
  assert.equal(graph(q, expect({ windows: WINDOWS.slice(0, 3) })), "ok");
});

Deno.test("score record: a forged lower loss passes the graph checks and is refuted by the head alone", () => {
  const honest = prove();
  const p = prove({ losses: honest.computed.losses.map((x, i) => (i === 2 ? x / 2 : x)) });
  assert.equal(graph(p), "ok");
  assert.deepEqual(verdicts(p), ["match", "match", "window loss"]);
  // The head's dispute needs the embedding, the final norm and the hidden state: no transformer block.
  const needed = scoreNeeded(fx.manifest, p.traces, p.head, 2);
  assert.deepEqual(
    needed,
    [fx.manifest.components.embed!, fx.manifest.components.norm!, p.head.input].sort(),
  );
  const blocks = Object.entries(fx.manifest.components).filter(([n]) => n.startsWith("block_")).map(([, r]) =>
    r
  );
  assert.equal(needed.some((r) => blocks.includes(r)), false);
});

Deno.test("score record: a forged argmax is refuted by the head as next-token argmax", () => {
  const p = prove();
  const argmax = p.head.argmax.map((row) => [...row]);
  argmax[1]![4] = (argmax[1]![4]! + 1) % 32;
  const forged = withHead(p, { argmax });
  assert.equal(graph(forged), "ok");
  assert.deepEqual(verdicts(forged), ["match", "match", "next-token argmax"]);
});

Deno.test("score record: a forged partition output is refuted from that partition's sealed inputs", () => {
  const p = prove();
  const t = readValue(p.objects.get(p.traces[0]!.output)!, [4, 10, 16]);
  t.data[7] = t.data[7]! + 0.5;
  const bytes = writeValue(t);
  const root = sha256Hex(bytes);
  const traces = [{ ...p.traces[0]!, output: root }, { ...p.traces[1]!, input: root }];
  const record = { ...p.record, traces: traces.map((x) => id(x as unknown as JsonValue)) };
  const forged = { ...p, record, traces, objects: new Map([...p.objects, [root, bytes]]) };
  assert.equal(graph(forged), "ok");
  assert.equal(verdicts(forged)[0], "forward output");
});

Deno.test("score record: the wrong model, substituted or reordered windows and malformed heads fail the graph checks", () => {
  const p = prove();
  assert.match(
    graph(p, expect({ model_root: "9".repeat(64) })),
    /model_root is .*, the scored model is 9{64}/,
  );
  const swapped = [WINDOWS[0]!, window(9, 6), WINDOWS[2]!, WINDOWS[3]!];
  assert.match(graph(p, expect({ windows: swapped })), /windows are not the assigned 4 windows in order/);
  const reordered = [WINDOWS[1]!, WINDOWS[0]!, WINDOWS[2]!, WINDOWS[3]!];
  assert.match(graph(p, expect({ windows: reordered })), /windows are not the assigned/);
  assert.match(graph(p, expect({ windows: WINDOWS.slice(0, 3) })), /windows are not the assigned 3/);
  assert.match(
    graph(withHead(p, { targets: [6, 3, 2, 5] })),
    /targets are \[6,3,2,5\], the windows have \[6,3,1,5\]/,
  );
  assert.match(graph(withHead(p, { losses: ["0x1p+0", "-0x1p+0", "0x1p+0", "0x1p+0"] })), /losses are not 4/);
  assert.match(
    graph(withHead(p, { losses: ["0x1.0p+0", "0x1p+0", "0x1p+0", "0x1p+0"] })),
    /losses are not 4/,
  );
  assert.match(graph(withHead(p, { losses: p.head.losses.slice(0, 3) })), /losses are not 4/);
  const argmax = p.head.argmax.map((r) => [...r]);
  argmax[0]![0] = 32;
  assert.match(graph(withHead(p, { argmax })), /argmax is not 4 rows of 10 ids below 32/);
  assert.match(
    graph(withHead(p, { input: p.traces[0]!.output })),
    /head input is not the last partition's output/,
  );
  assert.match(
    graph({ ...p, head: { ...p.head, losses: [...p.head.losses].reverse() } }),
    /does not match its id/,
  );
  // Partitions out of order: the traces swapped.
  const swappedTraces = [p.traces[1]!, p.traces[0]!];
  const record = { ...p.record, traces: swappedTraces.map((x) => id(x as unknown as JsonValue)) };
  assert.match(graph({ ...p, record, traces: swappedTraces }), /partition 0 input is not the record's input/);
  assert.match(graph({ ...p, record: { ...p.record, format: "x" } as never }), /format is "x"/);
});

Deno.test("score record: missing or malformed sealed inputs are a mismatch, a crash is an error", () => {
  const p = prove();
  assert.deepEqual(verdicts(p, new Map()), ["forward output", "forward output", "window loss"]);
  const wrong = writeValue({ shape: [4, 9, 16], data: new Float32Array(4 * 9 * 16) });
  const objects = new Map([...fx.objects, ...p.objects]);
  const head = { ...p.head, input: sha256Hex(wrong) };
  objects.set(head.input, wrong);
  const v = replayScore({
    manifest: fx.manifest,
    record: p.record,
    traces: p.traces,
    head,
    windows: WINDOWS,
    stage: 2,
    fetch: (r) => objects.get(r),
  });
  assert.equal(v.verdict === "mismatch" && v.what, "window loss");
  const crash = replayScore({
    manifest: fx.manifest,
    record: p.record,
    traces: p.traces,
    head: p.head,
    windows: WINDOWS,
    stage: 1,
    fetch: () => {
      throw new RangeError("out of memory");
    },
  });
  assert.deepEqual(crash, { verdict: "error", message: "RangeError: out of memory" });
});
