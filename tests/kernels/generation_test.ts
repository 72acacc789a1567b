import assert from "node:assert/strict";
import { decode, forwardLogits, generate, generateByRecompute, KvCache } from "../../kernels/generation.ts";
import { headDim } from "../../kernels/config.ts";
import { initModel } from "../../kernels/model.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import { errorCode } from "./_gradcheck.ts";
import {
  BLOCK_MAX_BYTES,
  blockBytesTaken,
  isResident,
  kernelMemory,
  releaseBlock,
  takeBlock,
} from "../../kernels/wasm/kernel_memory.ts";
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

Deno.test("a KV cache lives in a reusable block of the kernels' memory, given back by release for the next cache", () => {
  assert.ok(kernelMemory() !== null, "the kernels are available");
  const L = TINY.num_hidden_layers;
  const cfg = { ...TINY, max_position_embeddings: 4096 }; // 4 and 4096 positions: blocks of different sizes
  const cache = new KvCache(cfg, 4);
  assert.ok(cache.resident);
  for (const arrays of [cache.k, cache.v]) {
    assert.equal(arrays.length, L);
    for (const a of arrays) assert.ok(isResident(a), "every layer's keys and values are read in place");
  }
  // every array its own rows: writing one layer's keys changes no other array
  cache.k[1]!.fill(7);
  assert.ok([...cache.k, ...cache.v].every((a, i) => i === 1 || !a.includes(7)), "arrays overlap");
  const first = cache.k[0]!.byteOffset;
  cache.k[0]!.set([1, 2, 3], 0);
  cache.length = 1;
  cache.reserve(4096); // a larger block; the rows in use move with it, the old block is given back
  assert.equal(cache.capacity, 4096);
  assert.ok(cache.resident && cache.k[0]!.byteOffset !== first);
  assert.deepEqual([...cache.k[0]!.subarray(0, 3)], [1, 2, 3]);
  const again = new KvCache(cfg, 4); // the same size reuses the block given back
  assert.equal(again.k[0]!.byteOffset, first);
  const moved = cache.k[0]!.byteOffset;
  cache.release();
  assert.equal(cache.length, 0);
  assert.equal(cache.k.length, 0);
  cache.release(); // twice is once
  assert.throws(() => cache.reserve(8192), /Cannot use a released key\/value cache/);
  assert.equal(new KvCache(cfg, 4096).k[0]!.byteOffset, moved);
  again.release();
  // blocks are bounded: past BLOCK_MAX_BYTES none is given (the cache then keeps ordinary arrays, as with
  // `resident: false` below), and a size refused takes nothing from the bound
  // a block is given back once, and only a block can be
  const block = takeBlock(kernelMemory()!, 1000)!;
  releaseBlock(block);
  assert.throws(() => releaseBlock(block), /Cannot release resident block \d+: not a block in use/);
  assert.throws(() => releaseBlock(block + 64), /Cannot release resident block \d+: not a block in use/);
  assert.equal(takeBlock(kernelMemory()!, 1000), block, "the released block is the next of its size");
  releaseBlock(block);
  const taken = blockBytesTaken();
  assert.equal(takeBlock(kernelMemory()!, BLOCK_MAX_BYTES + 1), null);
  assert.equal(blockBytesTaken(), taken);
  assert.ok(taken <= BLOCK_MAX_BYTES);
});

Deno.test("decoding on resident and on ordinary KV caches gives the same logits, across growths", () => {
  const model = initModel(TINY, 9);
  const ids = Array.from({ length: 7 }, (_, i) => (i * 5 + 1) % TINY.vocab_size);
  const tables = rotaryTables(ids.length + 4, headDim(TINY), TINY.rope_theta);
  const run = (cache: KvCache) => {
    const out = [decode(model, cache, ids, tables)]; // grows from 2 positions
    for (let s = 0; s < 4; s++) out.push(decode(model, cache, [(s * 3 + 2) % TINY.vocab_size], tables));
    cache.release();
    return out.map(bits);
  };
  const resident = new KvCache(TINY, 2), ordinary = new KvCache(TINY, 2, { resident: false });
  assert.ok(resident.resident && !ordinary.resident && !isResident(ordinary.k[0]!));
  const want = run(ordinary);
  assert.deepEqual(run(resident), want);
  assert.deepEqual(run(new KvCache(TINY, 11)), want, "a resident cache that never grows");
});
