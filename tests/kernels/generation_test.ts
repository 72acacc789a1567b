import assert from "node:assert/strict";
import { decode, forwardLogits, generate, generateByRecompute, KvCache } from "../../kernels/generation.ts";
import { headDim } from "../../kernels/config.ts";
import { initModel } from "../../kernels/model.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import { errorCode } from "./_gradcheck.ts";
import { TINY } from "./_tiny.ts";

function bits(x: Float32Array): number[] {
  return Array.from(new Uint32Array(x.slice().buffer));
}

Deno.test("generation with a KV cache equals recomputing the whole prefix, bit for bit", () => {
  for (const seed of [1, 2, 3]) {
    const model = initModel(TINY, seed);
    // Larger weights than the initialisation so that the greedy choices vary from step to step.
    for (const c of Object.values(model.components)) {
      for (const t of Object.values(c)) t.data.forEach((v, i) => t.data[i] = v * 25);
    }
    const prompt = [3, 17, 4, 9];
    const cached = generate(model, prompt, 8);
    const full = generateByRecompute(model, prompt, 8);
    assert.deepEqual(cached.tokens, full.tokens, `seed ${seed}`);
    assert.equal(cached.logits.length, 8);
    assert.ok(new Set(cached.tokens).size >= 4, `seed ${seed}: ${cached.tokens}`);
    cached.logits.forEach((l, i) =>
      assert.deepEqual(bits(l), bits(full.logits[i]!), `seed ${seed} step ${i}`)
    );
  }
});

Deno.test("generation feeding a prompt token by token gives the same logits as the whole row", () => {
  const model = initModel(TINY, 4);
  const ids = [1, 2, 3, 30, 31, 0, 7];
  const full = forwardLogits(model, ids);
  const cache = new KvCache(TINY);
  const tables = rotaryTables(TINY.max_position_embeddings, headDim(TINY), TINY.rope_theta);
  const V = TINY.vocab_size;
  ids.forEach((id, t) =>
    assert.deepEqual(bits(decode(model, cache, [id], tables)), bits(full.slice(t * V, (t + 1) * V)))
  );
});

Deno.test("decode with lastOnly returns the last position's logits of the whole row, the same bits", () => {
  const model = initModel(TINY, 6);
  const ids = [5, 9, 2, 31, 1];
  const tables = rotaryTables(TINY.max_position_embeddings, headDim(TINY), TINY.rope_theta);
  const V = TINY.vocab_size;
  const all = decode(model, new KvCache(TINY), ids, tables);
  const cache = new KvCache(TINY);
  const last = decode(model, cache, ids, tables, true);
  assert.equal(last.length, V);
  assert.deepEqual(bits(last), bits(all.slice((ids.length - 1) * V)));
  assert.equal(cache.length, ids.length); // every position is still cached
  assert.deepEqual(
    bits(decode(model, cache, [7], tables)),
    bits(forwardLogits(model, [...ids, 7]).slice(-V)),
  );
});

Deno.test("generation stops at the end-of-sequence id and refuses rows longer than the positions", () => {
  const model = initModel(TINY, 1);
  const first = generate(model, [1, 2], 3).tokens[0]!;
  assert.deepEqual(generate(model, [1, 2], 3, first).tokens, [first]);
  assert.deepEqual(generateByRecompute(model, [1, 2], 3, first).tokens, [first]);
  assert.equal(errorCode(() => generate(model, new Array(16).fill(1), 2)), "invalid_tensor");
  assert.equal(errorCode(() => generate(model, [1, 99], 2)), "invalid_tensor");
});
