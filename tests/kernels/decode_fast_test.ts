import assert from "node:assert/strict";
import { makeModelResident } from "../../kernels/block.ts";
import { headDim } from "../../kernels/config.ts";
import { ATTENTION_SPLIT_MIN, decodeHiddenFast } from "../../kernels/decode_fast.ts";
import { decodeHidden, KvCache } from "../../kernels/generation.ts";
import { blockName } from "../../kernels/model.ts";
import { rmsnormOutput } from "../../kernels/rmsnorm.ts";
import { addForward } from "../../kernels/residual.ts";
import { rotaryForward, rotaryTables } from "../../kernels/rotary.ts";
import { kernelThreads, setKernelThreads } from "../../kernels/threads.ts";
import { kernelMemory, scratchBase } from "../../kernels/wasm/kernel_memory.ts";
import { wasmMatmulThreadsDisabled, wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";
import { q41Model } from "./_code_fixture.ts";
import { adversarial, firstBitDifference, rng, STARTUP_MS, uniform } from "./_matmul_util.ts";

const SEED = Number(Deno.env.get("NEURO_SEED") ?? 2026);

function sameBits(got: Float32Array, want: Float32Array, what: string): void {
  const at = firstBitDifference(got, want);
  assert.equal(at, -1, `${what}: differs at ${at}: ${got[at]} vs ${want[at]}`);
}

/** What `f` returns, or its error as text. */
function outcome<T>(f: () => T): T | string {
  try {
    return f();
  } catch (e) {
    return String(e);
  }
}

Deno.test("the row kernels are rmsnorm, the residual sum and the rotary embedding of TypeScript, bit for bit", () => {
  const km = kernelMemory()!, sm = km.softmax, next = rng(SEED);
  const at = scratchBase(), buf = () => km.memory.buffer;
  const put = (
    x: Float32Array,
    i: number,
  ) => (new Float32Array(buf(), at + i * 8192, x.length).set(x), at + i * 8192);
  const get = (i: number, n: number) => new Float32Array(buf(), at + i * 8192, n).slice();
  for (const C of [576, 64, 37, 3]) {
    for (const values of [uniform, adversarial]) {
      const what = `C=${C} ${values.name}, seed ${SEED}`;
      const x = values(next, C), w = values(next, C), b = values(next, C);
      for (const eps of [1e-5, 0.5]) {
        const want = outcome(() => rmsnormOutput(x, w, 1, C, eps));
        const r = sm.rmsnorm_row(put(x, 0), put(w, 1), at + 2 * 8192, C, Math.fround(eps));
        if (typeof want === "string") {
          assert.notEqual(r, 1, `${what}: the definition refuses, the row says finite`);
        } else {
          assert.equal(r, 1, what);
          sameBits(get(2, C), want, `rmsnorm ${what}`);
        }
      }
      const sum = outcome(() => addForward(x, b));
      const r = sm.add_row(put(x, 0), put(b, 1), at + 2 * 8192, C);
      if (typeof sum === "string") assert.equal(r, 0, what);
      else {
        assert.equal(r, 1, what);
        sameBits(get(2, C), sum, `add ${what}`);
      }
    }
  }
  // a sum of squares that overflows, and a sum that does
  const big = new Float32Array(64).fill(3e38);
  assert.equal(sm.rmsnorm_row(put(big, 0), put(big, 1), at + 2 * 8192, 64, 1e-5), 2);
  assert.equal(sm.add_row(put(big, 0), put(big, 1), at + 2 * 8192, 63), 0); // the last one alone, too
  const tables = rotaryTables(300, 64, 10000);
  for (const [heads, pos] of [[9, 0], [3, 17], [2, 299]] as const) {
    const x = adversarial(next, heads * 64), h = 32;
    const want = rotaryForward(x, tables, 1, 1, heads, 64, pos);
    const xAt = put(x, 0);
    sm.rotary_row(
      xAt,
      put(tables.cos.subarray(pos * h, pos * h + h), 1),
      put(tables.sin.subarray(pos * h, pos * h + h), 2),
      heads,
      64,
    );
    sameBits(get(0, heads * 64), want, `rotary ${heads} heads at ${pos}`);
  }
});

Deno.test("a decoded token on the fast path is the general path's bits, on 1, 2 and 3 threads, across a cache growth", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const model = q41Model(SEED), c = model.config, before = kernelThreads();
  makeModelResident(model.components);
  const tables = rotaryTables(40, headDim(c), c.rope_theta);
  const ids = [5, 77, 1000, 3, 3, 901, 12, 640, 2, 44];
  try {
    // the general path: a cache in ordinary arrays never takes the fast path
    const plain = new KvCache(c, 4, { resident: false });
    const want = [decodeHidden(model, plain, ids.slice(0, 3), tables)];
    for (const id of ids.slice(3)) want.push(decodeHidden(model, plain, [id], tables));
    for (const threads of [1, 2, 3]) {
      setKernelThreads(threads);
      const cache = new KvCache(c, 4); // grows to 8, then 16
      const got = [decodeHidden(model, cache, ids.slice(0, 3), tables)];
      for (const id of ids.slice(3)) {
        cache.reserve(cache.length + 1);
        const at = cache.length, fast = decodeHiddenFast(model, cache, id, tables);
        assert.ok(fast !== null, `the fast path applies at position ${at}`);
        assert.equal(cache.length, at + 1);
        got.push(fast);
      }
      got.forEach((x, i) => sameBits(x, want[i]!, `step ${i} on ${threads} threads`));
      const n = ids.length * c.num_key_value_heads * headDim(c); // every position's keys and values
      for (let l = 0; l < c.num_hidden_layers; l++) {
        sameBits(cache.k[l]!.subarray(0, n), plain.k[l]!.subarray(0, n), `keys of block ${l}`);
        sameBits(cache.v[l]!.subarray(0, n), plain.v[l]!.subarray(0, n), `values of block ${l}`);
      }
      cache.release();
    }
  } finally {
    setKernelThreads(before);
  }
});

Deno.test("a decoded token's attention split over the threads on the fast path is the general path's bits", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const model = q41Model(SEED + 3), c = model.config, before = kernelThreads();
  makeModelResident(model.components);
  // the devnet's 4 heads of 32 split from 128 keys on (ATTENTION_SPLIT_MIN): positions 126 … 131
  const H = c.num_attention_heads, D = headDim(c), from = Math.ceil(ATTENTION_SPLIT_MIN / (H * D)) - 2;
  const tables = rotaryTables(from + 6, D, c.rope_theta);
  const prompt = Array.from({ length: from }, (_, i) => (i * 37 + 11) % c.vocab_size),
    ids = [9, 8, 7, 6, 5, 4];
  try {
    const plain = new KvCache(c, from + 6, { resident: false });
    decodeHidden(model, plain, prompt, tables);
    const want = ids.map((id) => decodeHidden(model, plain, [id], tables));
    for (const threads of [2, 3]) {
      setKernelThreads(threads);
      const cache = new KvCache(c, from + 6);
      decodeHidden(model, cache, prompt, tables);
      ids.forEach((id, i) => {
        const got = decodeHiddenFast(model, cache, id, tables);
        assert.ok(got !== null);
        sameBits(got, want[i]!, `position ${from + i} on ${threads} threads`);
      });
      cache.release();
    }
  } finally {
    setKernelThreads(before);
  }
});

Deno.test("the fast path steps aside where it does not apply, and a value that is not finite gets the general path's error", () => {
  const c = q41Model(SEED + 1).config, tables = rotaryTables(16, headDim(c), c.rope_theta);
  // a model without code panels (not resident), a cache in ordinary arrays, an id outside the vocabulary
  const notResident = q41Model(SEED + 1);
  assert.equal(decodeHiddenFast(notResident, new KvCache(c, 4), 5, tables), null);
  makeModelResident(notResident.components); // made resident later: its tensors changed, so a new plan
  assert.ok(decodeHiddenFast(notResident, new KvCache(c, 4), 5, tables) !== null);
  const model = q41Model(SEED + 1);
  makeModelResident(model.components);
  assert.equal(decodeHiddenFast(model, new KvCache(c, 4, { resident: false }), 5, tables), null);
  assert.equal(decodeHiddenFast(model, new KvCache(c, 4), c.vocab_size, tables), null);
  assert.equal(
    decodeHiddenFast(model, new KvCache(c, 4), 5, rotaryTables(0, headDim(c), c.rope_theta)),
    null,
  );
  // block 1's second norm overflows: the fast path gives up at it, and the general path raises its error
  const broken = q41Model(SEED + 2), plain = q41Model(SEED + 2);
  for (const m of [broken, plain]) {
    m.components[blockName(1)]!["post_attention_layernorm.weight"]!.data.fill(3e38);
  }
  makeModelResident(broken.components);
  const cache = new KvCache(c, 4);
  assert.equal(decodeHiddenFast(broken, cache, 5, tables), null);
  assert.equal(cache.length, 0, "nothing advanced");
  const want = outcome(() => decodeHidden(plain, new KvCache(c, 4, { resident: false }), [5], tables));
  assert.match(String(want), /Cannot use rmsnorm output: element \d+ is Infinity/);
  assert.equal(outcome(() => decodeHidden(broken, cache, [5], tables)), want);
  assert.equal(cache.length, 0);
});
