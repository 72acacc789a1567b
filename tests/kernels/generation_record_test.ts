import assert from "node:assert/strict";
import type { JsonValue } from "../../core/canonical.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { checkGeneration, type GenerationExpect } from "../../kernels/generation_check.ts";
import { generate } from "../../kernels/generation.ts";
import { type GenerationProof, generationRecord } from "../../kernels/generation_record.ts";
import { generationNeeded, replayGeneration } from "../../kernels/generation_referee.ts";
import { readValue, writeValue } from "../../kernels/safetensors.ts";
import { TINY_PARTITIONS, variedModel } from "./_generation_fixture.ts";

const fx = variedModel(1);
const PROMPT = [3, 17, 4, 9];
// Greedy from PROMPT: 16, 21, 28, 13, 13, 13, 26, 13. With EOS 28 it stops after three tokens.
const EOS = 28;

function expect(overrides: Partial<GenerationExpect> = {}): GenerationExpect {
  return { model_root: fx.root, prompt_ids: PROMPT, max_tokens: 8, eos_id: EOS, ...overrides };
}

function prove(tokens: readonly number[], max = 8, eos: number | null = EOS): GenerationProof {
  return generationRecord(
    fx.model,
    fx.root,
    PROMPT,
    tokens,
    { max_tokens: max, eos_id: eos },
    TINY_PARTITIONS,
  );
}

function graph(p: GenerationProof, e = expect()) {
  return checkGeneration(p.record, p.traces, p.head, fx.manifest, e);
}

/** Every stage's verdict with the honest objects plus the proof's, or `objects` when given. */
function verdicts(p: GenerationProof, objects?: Map<string, Uint8Array>): string[] {
  const all = objects ?? new Map([...fx.objects, ...p.objects]);
  return [0, 1, 2].map((stage) => {
    const v = replayGeneration({
      manifest: fx.manifest,
      record: p.record,
      traces: p.traces,
      head: p.head,
      stage,
      fetch: (r) =>
        generationNeeded(fx.manifest, p.traces, p.head, stage).includes(r) ? all.get(r) : undefined,
    });
    return v.verdict === "mismatch" ? v.what : v.verdict;
  });
}

function code(r: { ok: boolean; message?: string }): string {
  return r.ok ? "ok" : (r as { message: string }).message;
}

Deno.test("generation record: one prefill reproduces every greedy step and every stage replays as a match", () => {
  const g = generate(fx.model, PROMPT, 8, EOS);
  assert.deepEqual(g.tokens, [16, 21, 28]);
  const p = prove(g.tokens);
  assert.deepEqual(p.computed, g.tokens);
  assert.equal(p.record.stop, "eos");
  assert.equal(p.record.input, id([...PROMPT, 16, 21]));
  assert.equal(p.recordRoot, id(p.record as unknown as JsonValue));
  assert.equal(p.traces.length, 2);
  assert.equal(p.head.first, 3);
  assert.equal(p.head.input, p.traces[1]!.output);
  assert.deepEqual(graph(p).ok, true);
  assert.deepEqual(verdicts(p), ["match", "match", "match"]);
  // Without EOS the limit stops it: all eight tokens, and the prefill still reproduces each one.
  const all = generate(fx.model, PROMPT, 8);
  const q = prove(all.tokens, 8, null);
  assert.deepEqual(q.computed, [16, 21, 28, 13, 13, 13, 26, 13]);
  assert.equal(q.record.stop, "limit");
  assert.equal(graph(q, expect({ eos_id: null })).ok, true);
  assert.deepEqual(verdicts(q), ["match", "match", "match"]);
});

Deno.test("generation record: a forged token passes the graph checks and is refuted by the head alone", () => {
  // The forger claims 5 instead of 21 at step 1 and feeds it on honestly: every partition matches.
  const rest = generate(fx.model, [...PROMPT, 16, 5], 6, EOS).tokens;
  const forged = [16, 5, ...rest];
  const p = prove(forged);
  assert.notDeepEqual(p.computed, forged);
  assert.equal(graph(p).ok, true);
  assert.deepEqual(verdicts(p), ["match", "match", "generated token"]);
  // The head needs only the embedding, the final norm and the final hidden state.
  const needed = generationNeeded(fx.manifest, p.traces, p.head, 2);
  assert.deepEqual(
    needed,
    [fx.manifest.components.embed!, fx.manifest.components.norm!, p.head.input].sort(),
  );
});

Deno.test("generation record: an early or a late stop fails the graph checks, a forged EOS fails the head", () => {
  const early = prove([16, 21]); // stop "limit" after 2 of 8
  assert.match(code(graph(early)), /early stop/);
  const late = prove([16, 21, 28, 13, 13]); // continues after EOS
  assert.match(code(graph(late)), /late stop/);
  // Claiming EOS where the model did not emit it: the graph is consistent, the head refutes it.
  const fakeEos = prove([16, EOS]);
  assert.equal(fakeEos.record.stop, "eos");
  assert.equal(graph(fakeEos).ok, true);
  assert.deepEqual(verdicts(fakeEos), ["match", "match", "generated token"]);
  // A "limit" record that ends on EOS, and an "eos" record without it, are refused.
  assert.match(code(graph({ ...early, record: { ...early.record, stop: "eos" } })), /stop is eos/);
});

Deno.test("generation record: the wrong prompt, model, limit or token sequence fails the graph checks", () => {
  const p = prove([16, 21, 28]);
  assert.match(code(graph(p, expect({ prompt_ids: [3, 17, 4, 8] }))), /prompt_ids are not the job's/);
  assert.match(code(graph(p, expect({ model_root: "0".repeat(64) }))), /model_root/);
  assert.match(code(graph(p, expect({ max_tokens: 4 }))), /max_tokens/);
  // Tokens that are not the ones the head argmax commits, or that the prefill input does not bind.
  const other = { ...p.record, tokens: [16, 22, 28] };
  assert.match(code(checkGeneration(other, p.traces, p.head, fx.manifest, expect())), /input is not the id/);
  const head = { ...p.head, argmax: [16, 22, 28] };
  const rebound = { ...p.record, head: id(head as unknown as JsonValue) };
  assert.match(
    code(checkGeneration(rebound, p.traces, head, fx.manifest, expect())),
    /argmax is not the record's tokens/,
  );
  // A token outside the vocabulary, a trace that is not its id, partitions out of order.
  const big = prove([16, 21, 28]);
  assert.match(
    code(
      checkGeneration({ ...big.record, tokens: [16, 32, 28] }, big.traces, big.head, fx.manifest, expect()),
    ),
    /ids below 32/,
  );
  const swapped = [p.traces[1]!, p.traces[0]!];
  assert.match(
    code(checkGeneration(p.record, swapped, p.head, fx.manifest, expect())),
    /does not match its id/,
  );
});

Deno.test("generation record: a forged partition output is refuted from that partition's sealed inputs", () => {
  const p = prove([16, 21, 28]);
  // Partition 0's output nudged; partition 1 is then computed from the forged activation.
  const t = readValue(p.objects.get(p.traces[0]!.output)!, [1, 6, 16]);
  t.data[5] = t.data[5]! + 0.25;
  const bytes = writeValue(t);
  const root = sha256Hex(bytes);
  const traces = [{ ...p.traces[0]!, output: root }, { ...p.traces[1]!, input: root }];
  const record = { ...p.record, traces: traces.map((x) => id(x as unknown as JsonValue)) };
  const forged = { ...p, record, traces, objects: new Map([...p.objects, [root, bytes]]) };
  assert.equal(graph(forged).ok, true);
  const v = verdicts(forged);
  assert.equal(v[0], "forward output");
});

Deno.test("generation record: missing or malformed sealed inputs are a mismatch, a crash is an error", () => {
  const p = prove([16, 21, 28]);
  const none = new Map<string, Uint8Array>();
  assert.deepEqual(verdicts(p, none), ["forward output", "forward output", "generated token"]);
  // The final hidden state sealed with the wrong shape.
  const wrong = writeValue({ shape: [1, 5, 16], data: new Float32Array(80) });
  const objects = new Map([...fx.objects, ...p.objects]);
  const head = { ...p.head, input: sha256Hex(wrong) };
  objects.set(head.input, wrong);
  const v = replayGeneration({
    manifest: fx.manifest,
    record: p.record,
    traces: p.traces,
    head,
    stage: 2,
    fetch: (r) => objects.get(r),
  });
  assert.equal(v.verdict === "mismatch" && v.what, "generated token");
  const crash = replayGeneration({
    manifest: fx.manifest,
    record: p.record,
    traces: p.traces,
    head: p.head,
    stage: 1,
    fetch: () => {
      throw new RangeError("out of memory");
    },
  });
  assert.deepEqual(crash, { verdict: "error", message: "RangeError: out of memory" });
});
