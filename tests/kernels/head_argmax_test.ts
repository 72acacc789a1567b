import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { type ModelConfig, PRESETS } from "../../kernels/config.ts";
import { argmax } from "../../kernels/cross_entropy.ts";
import { Q8Drafter } from "../../kernels/draft.ts";
import { generateDrafted } from "../../kernels/draft_verify.ts";
import { generate, generateTokens } from "../../kernels/generation.ts";
import { headLogits } from "../../kernels/head.ts";
import { HEAD_ARGMAX_STATS, headTokens } from "../../kernels/head_argmax.ts";
import { makeModelResident } from "../../kernels/block.ts";
import { EMBED_TENSOR, NORM_TENSOR } from "../../kernels/model.ts";
import type { Tensors } from "../../kernels/safetensors.ts";
import {
  allocResident,
  kernelMemory,
  residentFloat32,
  scratchBase,
} from "../../kernels/wasm/kernel_memory.ts";
import { adversarial, rng, uniform, withThreads } from "./_matmul_util.ts";
import { lively } from "./_generation_fixture.ts";

const SEED = Number(Deno.env.get("NEURO_SEED") ?? 4099);

interface Head {
  readonly norm: Tensors;
  readonly embed: Tensors;
  readonly c: ModelConfig;
}

/** A head of V rows of width C whose embedding is resident (so it gets the int8 copy), or not. */
function head(w: Float32Array, V: number, C: number, resident = true, normW?: Float32Array): Head {
  let data = w;
  if (resident) {
    const km = kernelMemory();
    assert.ok(km !== null, "the kernels are available");
    data = residentFloat32(km, allocResident(km, w.byteLength), w.length);
    data.set(w);
  }
  return {
    norm: { [NORM_TENSOR]: { shape: [C], data: normW ?? new Float32Array(C).fill(1) } },
    embed: { [EMBED_TENSOR]: { shape: [V, C], data } },
    c: { ...PRESETS.devnet, hidden_size: C, vocab_size: V },
  };
}

/** What a call gave: the ids, or its error's code and message. */
function outcome(f: () => Int32Array): number[] | string {
  try {
    return Array.from(f());
  } catch (e) {
    if (e instanceof ProtocolError) return `${e.code}: ${e.message}`;
    throw e;
  }
}

/** Checks headTokens against argmax of the whole head; returns the stats' change. */
function check(h: Head, hidden: Float32Array, N: number, what: string) {
  const V = h.c.vocab_size;
  const want = outcome(() => argmax(headLogits(hidden, h.norm, h.embed, h.c, N), N, V));
  const before = { ...HEAD_ARGMAX_STATS };
  const got = outcome(() => headTokens(hidden, h.norm, h.embed, h.c, N));
  assert.deepEqual(got, want, what);
  return {
    rows: HEAD_ARGMAX_STATS.rows - before.rows,
    candidates: HEAD_ARGMAX_STATS.candidates - before.candidates,
    whole: HEAD_ARGMAX_STATS.whole - before.whole,
    want,
  };
}

Deno.test("the pruned head gives argmax of the whole head's logits on random heads, at 1, 2 and 3 threads", async () => {
  const next = rng(SEED);
  // SmolLM2's width and a narrow one; V not a multiple of the threads' split
  const heads = [[3001, 576], [4099, 64], [20000, 128]].map(([V, C]) => head(uniform(next, V! * C!), V!, C!));
  const hiddens = heads.map((h) => uniform(next, 5 * h.c.hidden_size));
  await withThreads((threads) => {
    heads.forEach((h, i) => {
      const s = check(h, hiddens[i]!, 5, `head ${i} at ${threads} threads`);
      assert.equal(s.whole, 0, `head ${i}: no row needs the whole head`);
      assert.equal(s.rows, 5);
      // every row computes its winner exactly; most rows are pruned away
      assert.ok(s.candidates >= 5 && s.candidates <= 5 * h.c.vocab_size / 20, `${s.candidates} candidates`);
    });
  });
});

Deno.test("the pruned head keeps argmax's ties, 1-ulp neighbours and differences below int8's resolution", () => {
  const next = rng(SEED + 1);
  const V = 2000, C = 96, N = 1;
  const hidden = uniform(next, C);
  const base = uniform(next, V * C);
  const ulp = (x: number, k: number) => {
    const f = new Float32Array([x]), u = new Int32Array(f.buffer);
    u[0]! += k;
    return f[0]!;
  };
  // y's own direction, scaled so that its logit is the largest
  const top = hidden.map((x) => Math.fround(x * 4));
  const cases: [string, (w: Float32Array) => void][] = [
    ["two equal largest rows: the first wins", (w) => {
      w.set(top, 700 * C);
      w.set(top, 1500 * C);
    }],
    ["the largest row and 40 neighbours one ulp away in one weight", (w) => {
      for (let v = 100; v < 140; v++) {
        const row = top.slice();
        row[v % C] = ulp(row[v % C]!, v % 2 === 0 ? 1 : -1);
        w.set(row, v * C);
      }
      w.set(top, 120 * C);
    }],
    ["every row the same: row 0", (w) => {
      for (let v = 0; v < V; v++) w.set(top, v * C);
    }],
    ["a zero head: row 0", (w) => w.fill(0)],
    ["rows apart by 2^-20 of a weight, below int8's resolution", (w) => {
      for (let v = 0; v < V; v++) {
        const row = top.slice();
        row[0] = Math.fround(row[0]! * (1 + ((v * 7919) % 97) * 2 ** -20));
        w.set(row, v * C);
      }
    }],
    ["one row far larger than the rest, of other rows tiny", (w) => {
      for (let i = 0; i < V * C; i++) w[i] = Math.fround(w[i]! * 2 ** -60);
      w.set(top, 1999 * C);
    }],
  ];
  for (const [what, build] of cases) {
    const w = base.slice();
    build(w);
    const s = check(head(w, V, C), hidden, N, what);
    assert.equal(s.whole, 0, what);
  }
  // the expected winners, spelled out
  const ties = base.slice();
  ties.set(top, 700 * C);
  ties.set(top, 1500 * C);
  assert.deepEqual(check(head(ties, V, C), hidden, N, "ties").want, [700]);
  assert.deepEqual(check(head(new Float32Array(V * C), V, C), hidden, N, "zero").want, [0]);
  // adversarial weights and inputs (subnormals, huge values, cancellation): the same ids or the same error
  for (let r = 0; r < 6; r++) {
    const w = adversarial(next, V * C), x = adversarial(next, 2 * C);
    check(head(w, V, C), x, 2, `adversarial ${r}`);
  }
});

Deno.test("the pruned head raises the whole head's errors and falls back where its bound does not hold", () => {
  const next = rng(SEED + 2);
  const V = 1500, C = 64;
  const w = uniform(next, V * C), hidden = uniform(next, 3 * C);
  const h = head(w, V, C);
  for (const bad of [NaN, Infinity, -Infinity]) {
    const x = hidden.slice();
    x[C + 5] = bad;
    const s = check(h, x, 3, `hidden ${bad}`);
    assert.match(String(s.want), /^non_finite_tensor: /);
  }
  // weights so large that logits overflow: the matmul's own error
  const huge = head(w.map((v) => Math.fround(v * 2 ** 125)), V, C);
  const overflow = check(huge, hidden, 3, "overflowing logits");
  assert.match(
    String(overflow.want),
    /^non_finite_tensor: Cannot use linear output: element \d+ is -?Infinity$/,
  );
  assert.equal(overflow.whole, 3);
  // large but finite logits: still pruned
  const large = check(head(w.map((v) => Math.fround(v * 2 ** 100)), V, C), hidden, 3, "large logits");
  assert.equal(large.whole, 0);
  assert.equal(typeof large.want, "object");
  // a weight that is not finite: the whole head decides, with its error
  const nanW = w.slice();
  nanW[77 * C + 3] = NaN;
  const nan = check(head(nanW, V, C), hidden, 3, "a NaN weight");
  assert.match(String(nan.want), /^non_finite_tensor: Cannot use linear output: element 77 is NaN$/);
  assert.equal(nan.whole, 3);
  // a width that is not a multiple of 32, and an embedding that is not resident: the whole head, same ids
  const narrow = check(head(uniform(next, V * 48), V, 48), uniform(next, 2 * 48), 2, "width 48");
  assert.equal(narrow.whole, 2);
  const plain = check(head(w, V, C, false), hidden, 3, "not resident");
  assert.equal(plain.whole, 3);
});

Deno.test("generateTokens and tokens-only draft-and-verify give generate's tokens (eos and no tokens too)", () => {
  const model = lively(11);
  makeModelResident(model.components);
  const prompt = [5, 900, 17, 3001, 44, 2, 77, 1024];
  const want = generate(model, prompt, 24).tokens;
  assert.ok(new Set(want).size >= 6, `the answer varies: ${want}`);
  const before = { ...HEAD_ARGMAX_STATS };
  assert.deepEqual(generateTokens(model, prompt, 24), want);
  assert.equal(HEAD_ARGMAX_STATS.whole, before.whole, "every token by the pruned head");
  assert.equal(HEAD_ARGMAX_STATS.rows - before.rows, 24);
  const eos = want[9]!;
  const stopped = generate(model, prompt, 24, eos).tokens;
  assert.deepEqual(generateTokens(model, prompt, 24, eos), stopped);
  assert.ok(stopped.length < 24 && stopped.at(-1) === eos);
  assert.deepEqual(generateTokens(model, prompt, 0), []);
  for (const drafter of [null, new Q8Drafter(model)]) {
    for (const k of [1, 6]) {
      const got = generateDrafted(model, prompt, 24, { drafter, k, tokensOnly: true });
      assert.deepEqual(got.tokens, want, `drafter ${drafter !== null}, k ${k}`);
      assert.deepEqual(got.logits, []);
      const e = generateDrafted(model, prompt, 24, { drafter, k, eos, tokensOnly: true });
      assert.deepEqual(e.tokens, stopped);
    }
  }
  assert.deepEqual(generateDrafted(model, prompt, 0, { tokensOnly: true }).tokens, []);
});

Deno.test("each term of the pruned head's bound is needed: int8 errors aligned with y would otherwise hide the winner", () => {
  const V = 64, C = 64, small = uniform(rng(SEED + 3), V * C).map((v) => Math.fround(v * 2 ** -12));
  const s = 2 ** -7;
  // The weights' error: y all equal; row 3's weights round down by 0.49 of a step in every block, so its
  // int8 logit is below row 1's (exactly quantisable) although its true logit is above it.
  const weights = small.slice();
  for (let b = 0; b < C; b += 32) {
    weights[3 * C + b] = 127 * s;
    weights[1 * C + b] = 127 * s;
    for (let i = 1; i < 32; i++) {
      weights[3 * C + b + i] = Math.fround(10.49 * s);
      weights[1 * C + b + i] = (i <= 7 ? 11 : 10) * s;
    }
  }
  assert.deepEqual(check(head(weights, V, C), new Float32Array(C).fill(1), 1, "weights' error").want, [3]);
  // The input's error: y's values round down by 0.49 of a step in every block; rows 1 and 3 are exactly
  // quantisable, and row 1's int8 logit is above row 3's although its true logit is below it.
  const inputs = small.slice(), x = new Float32Array(C);
  for (let b = 0; b < C; b += 32) {
    x[b] = 127;
    for (let i = 1; i < 32; i++) x[b + i] = Math.fround(10.49);
    inputs[3 * C + b] = 127 * s;
    inputs[1 * C + b] = 254 * s;
    for (let i = 1; i < 32; i++) {
      inputs[3 * C + b + i] = 127 * s;
      inputs[1 * C + b + i] = 76 * s;
    }
  }
  assert.deepEqual(check(head(inputs, V, C), x, 1, "input's error").want, [3]);
});

Deno.test("the Q8 drafter of a resident model shares the pruned head's int8 copy (no second copy) and drafts the same", () => {
  const c = PRESETS.devnet, V = c.vocab_size, C = c.hidden_size;
  // int8 weights, a float32 scale per 32 and two float64 norms per row, each 64-byte aligned here
  const headBytes = V * C + (V * C / 32) * 4 + 16 * V;
  const prompt = [5, 900, 17, 3001, 44, 2, 77, 1024];
  // The drafter first (it builds the shared copy), then the pruned head: the head adds no resident bytes.
  const first = lively(11);
  makeModelResident(first.components);
  const want = generate(first, prompt, 16).tokens;
  let at = scratchBase();
  const drafter = new Q8Drafter(first);
  const drafterBytes = scratchBase() - at;
  at = scratchBase();
  assert.deepEqual(generateTokens(first, prompt, 16), want);
  assert.equal(scratchBase() - at, 0, "the pruned head reads the drafter's copy");
  const drafted = generateDrafted(first, prompt, 16, { drafter, k: 4 });
  assert.deepEqual(drafted.tokens, want);
  // The pruned head first, then the drafter: the drafter quantises its blocks only.
  const second = lively(11);
  makeModelResident(second.components);
  assert.deepEqual(generateTokens(second, prompt, 16), want);
  at = scratchBase();
  const shared = new Q8Drafter(second);
  assert.equal(scratchBase() - at, drafterBytes - headBytes);
  assert.equal(
    generateDrafted(second, prompt, 16, { drafter: shared, k: 4 }).stats.accepted,
    drafted.stats.accepted,
  );
  // A model in ordinary arrays: the drafter keeps its own head, and drafts the same.
  const plain = lively(11);
  at = scratchBase();
  const own = new Q8Drafter(plain);
  assert.equal(scratchBase() - at, drafterBytes - 16 * V); // the int8 copy without the pruned head's norms
  assert.equal(
    generateDrafted(plain, prompt, 16, { drafter: own, k: 4 }).stats.accepted,
    drafted.stats.accepted,
  );
});
