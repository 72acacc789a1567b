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

Deno.test("a KV cache grows on demand, keeps its rows, and decoding across a growth gives the whole row's bits", () => {
  const model = initModel(TINY, 8);
  const P = TINY.max_position_embeddings;
  const ids = Array.from({ length: 11 }, (_, i) => (i * 7 + 3) % TINY.vocab_size);
  const full = forwardLogits(model, ids);
  const tables = rotaryTables(ids.length, headDim(TINY), TINY.rope_theta); // only the positions used
  const V = TINY.vocab_size;
  const cache = new KvCache(TINY, 2);
  assert.equal(cache.capacity, 2);
  // chunks of 1, 3, 2 and 5 positions: growths to 4 (doubling), 4, 8, then 11 (more than double needed)
  let at = 0;
  for (const [n, capacity] of [[1, 2], [3, 4], [2, 8], [5, 16]] as const) {
    const keysBefore = bits(cache.k[0]!.subarray(0, at * TINY.num_key_value_heads * headDim(TINY)));
    const out = decode(model, cache, ids.slice(at, at + n), tables);
    assert.equal(cache.capacity, Math.min(P, capacity), `after ${at + n}`);
    assert.deepEqual(
      bits(cache.k[0]!.subarray(0, at * TINY.num_key_value_heads * headDim(TINY))),
      keysBefore,
    ); // rows kept
    assert.deepEqual(bits(out), bits(full.slice(at * V, (at + n) * V)), `positions ${at}..${at + n}`);
    at += n;
  }
  assert.equal(cache.length, ids.length);
  cache.reserve(10 * P); // never past the model's context
  assert.equal(cache.capacity, P);
  assert.equal(cache.k[0]!.length, P * TINY.num_key_value_heads * headDim(TINY));
  assert.equal(new KvCache(TINY, 10 * P).capacity, P);
  assert.equal(new KvCache(TINY, 0).capacity, 1);
});
