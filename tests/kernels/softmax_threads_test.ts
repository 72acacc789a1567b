import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import {
  attentionBackward,
  attentionBackwardReference,
  type AttentionDims,
  attentionForward,
  attentionForwardReference,
  attentionOutput,
} from "../../kernels/attention.ts";
import {
  crossEntropyForward,
  crossEntropyForwardBackward,
  crossEntropyForwardBackwardReference,
  crossEntropyForwardReference,
} from "../../kernels/cross_entropy.ts";
import { exp64, expf } from "../../kernels/math.ts";
import { allocResident, kernelMemory, residentFloat32 } from "../../kernels/wasm/kernel_memory.ts";
import { SOFTMAX_THREAD_MIN_WORK, unitSplit } from "../../kernels/wasm/softmax_wasm.ts";
import { adversarial, firstBitDifference, rng, uniform, withThreads } from "./_matmul_util.ts";

const SEED = Number(Deno.env.get("NEURO_SEED") ?? 1717);

/** What a call gave: its outputs' bits, or its error's code and message. */
function outcome(
  f: () => Record<string, Float32Array | number>,
): Record<string, Float32Array | number> | string {
  try {
    return f();
  } catch (e) {
    if (e instanceof ProtocolError) return `${e.code}: ${e.message}`;
    throw e;
  }
}

function assertSame(
  got: Record<string, Float32Array | number> | string,
  want: Record<string, Float32Array | number> | string,
  what: string,
): void {
  if (typeof want === "string" || typeof got === "string") {
    assert.equal(got, want, what);
    return;
  }
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), what);
  for (const [name, w] of Object.entries(want)) {
    const g: Float32Array | number = got[name]!;
    if (typeof w === "number") assert.ok(Object.is(g, w), `${what}: ${name} is ${g}, expected ${w}`);
    else {
      const at = firstBitDifference(g as Float32Array, w);
      assert.equal(at, -1, `${what}: ${name} differs at ${at}: ${(g as Float32Array)[at]} vs ${w[at]}`);
    }
  }
}

// Shapes: SmolLM2's (H=9, KVH=3, D=64) for a prompt and a decode step, and odd ones: D not a multiple of the
// 4 SIMD lanes, Tk not a multiple of 4, more keys than queries, one kv head, as many kv heads as heads; and
// ones that reach every path of the kernels' blocked sums (32 or 16 wide, then 4, then 1; rows two at a time
// and an odd last row): D = 38 and 45 tokens, D = 36 with 70 keys for 3 queries.
const SHAPES: AttentionDims[] = [
  { B: 1, Tq: 32, Tk: 32, H: 9, KVH: 3, D: 64 },
  { B: 1, Tq: 45, Tk: 45, H: 4, KVH: 2, D: 38 },
  { B: 1, Tq: 3, Tk: 70, H: 2, KVH: 1, D: 36 },
  { B: 1, Tq: 1, Tk: 37, H: 9, KVH: 3, D: 64 },
  { B: 2, Tq: 7, Tk: 7, H: 6, KVH: 2, D: 13 },
  { B: 3, Tq: 5, Tk: 11, H: 4, KVH: 4, D: 6 },
  { B: 1, Tq: 9, Tk: 9, H: 5, KVH: 1, D: 3 },
  { B: 2, Tq: 1, Tk: 1, H: 2, KVH: 1, D: 1 },
  { B: 1, Tq: 1, Tk: 83, H: 9, KVH: 3, D: 64 }, // one decoded SmolLM2 token after 82
  { B: 1, Tq: 1, Tk: 461, H: 9, KVH: 3, D: 64 },
  { B: 1, Tq: 2, Tk: 130, H: 6, KVH: 2, D: 22 },
];

Deno.test("the softmax kernels' exp64 is kernels/math.ts's exp64 bit for bit, specials included", () => {
  const km = kernelMemory();
  assert.ok(km !== null, "the kernels are available");
  const next = rng(SEED);
  const xs = [
    0,
    -0,
    1,
    -1,
    0.5,
    709.782712893384,
    709.79,
    -745.2,
    -745.3,
    -707.5,
    -708,
    709,
    Infinity,
    -Infinity,
  ];
  for (let i = 0; i < 20000; i++) xs.push(((next() >>> 8) / 16777216 - 0.5) * 1600 * (i % 2 ? 1 : 1e-3));
  for (const x of [...xs, NaN]) {
    const want = exp64(x), got = km.softmax.exp64(x);
    assert.ok(Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)), `exp64(${x}) seed ${SEED}`);
  }
});

Deno.test("the softmax kernels' four-lane expf is expf lane by lane, in range and out of it", () => {
  const km = kernelMemory()!;
  const next = rng(SEED + 1);
  const xs: number[] = [
    -707,
    709,
    -707.0001,
    709.0001,
    -745.2,
    -746,
    88.8,
    88.7,
    -0,
    0,
    Infinity,
    -Infinity,
    NaN,
  ];
  for (let i = 0; i < 20000; i++) xs.push(((next() >>> 8) / 16777216 - 0.5) * (i % 4 === 0 ? 1600 : 60));
  while (xs.length % 4 !== 0) xs.push(0);
  const x = new Float32Array(km.memory.buffer, 0, 4), y = new Float32Array(km.memory.buffer, 16, 4);
  for (let i = 0; i < xs.length; i += 4) {
    x.set(xs.slice(i, i + 4));
    km.softmax.expf4(0, 16);
    for (let l = 0; l < 4; l++) {
      const want = expf(x[l]!), got = y[l]!;
      assert.ok(
        Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)),
        `expf(${x[l]}) seed ${SEED}`,
      );
    }
  }
});

Deno.test("unitSplit covers every unit once, in order, on at most the threads, and keeps small calls whole", () => {
  assert.deepEqual(unitSplit(9, 1 << 20, 2), [[0, 5], [5, 9]]);
  assert.deepEqual(unitSplit(9, 1 << 20, 1), [[0, 9]]);
  assert.deepEqual(unitSplit(9, 100, 3), [[0, 9]]);
  assert.deepEqual(unitSplit(9, SOFTMAX_THREAD_MIN_WORK - 1, 3), [[0, 9]]);
  assert.deepEqual(unitSplit(9, SOFTMAX_THREAD_MIN_WORK, 3), [[0, 3], [3, 6], [6, 9]]);
  assert.deepEqual(unitSplit(2, 1 << 20, 3), [[0, 1], [1, 2]]);
  assert.deepEqual(unitSplit(1, 1 << 20, 3), [[0, 1]]);
  assert.deepEqual(unitSplit(10, 1 << 20, 3), [[0, 4], [4, 7], [7, 10]]);
});

Deno.test("attention on 1, 2 and 3 threads equals the reference bit for bit on random and adversarial values", async () => {
  await withThreads((threads) => {
    for (const [s, dims] of SHAPES.entries()) {
      for (const kind of ["uniform", "adversarial", "scaled"] as const) {
        const next = rng(SEED + 31 * s);
        const { B, Tq, Tk, H, KVH, D } = dims;
        const gen = (n: number) => {
          if (kind === "adversarial") return adversarial(next, n);
          const x = uniform(next, n);
          if (kind === "scaled") x.forEach((v, i) => x[i] = v * 40); // scores of ±1e4: exponentials underflow
          return x;
        };
        const q = gen(B * Tq * H * D), k = gen(B * Tk * KVH * D), v = gen(B * Tk * KVH * D);
        const what = `${kind} ${JSON.stringify(dims)} on ${threads} threads, seed ${SEED}`;
        const want = outcome(() => {
          const r = attentionForwardReference(q, k, v, dims);
          return { out: r.out, p: r.cache.p };
        });
        const got = outcome(() => {
          const r = attentionForward(q, k, v, dims);
          return { out: r.out, p: r.cache.p };
        });
        assertSame(got, want, `forward ${what}`);
        if (Tq !== Tk || typeof want === "string") continue;
        const dOut = gen(B * Tq * H * D), cache = { p: want.p as Float32Array };
        assertSame(
          outcome(() => attentionBackward(dOut, q, k, v, cache, dims)),
          outcome(() => attentionBackwardReference(dOut, q, k, v, cache, dims)),
          `backward ${what}`,
        );
      }
    }
  });
});

Deno.test("attentionOutput is attentionForward's output, the same bits and errors, on resident keys and values too", async () => {
  const km = kernelMemory()!;
  await withThreads((threads) => {
    for (const dims of SHAPES) {
      const { B, Tq, Tk, H, KVH, D } = dims;
      for (const values of [uniform, adversarial]) {
        const next = rng(SEED + Tk * 31 + D);
        const q = values(next, B * Tq * H * D),
          k = values(next, B * Tk * KVH * D),
          v = values(next, B * Tk * KVH * D);
        // the keys and values where a resident KV cache keeps them: read in place, never copied
        const at = allocResident(km, 8 * k.length);
        const rk = residentFloat32(km, at, k.length), rv = residentFloat32(km, at + 4 * k.length, v.length);
        rk.set(k);
        rv.set(v);
        const what = `${JSON.stringify(dims)} ${values.name} on ${threads} threads, seed ${SEED}`;
        const want = outcome(() => ({ out: attentionForward(q, k, v, dims).out }));
        assertSame(outcome(() => ({ out: attentionOutput(q, k, v, dims) })), want, what);
        assertSame(outcome(() => ({ out: attentionOutput(q, rk, rv, dims) })), want, `${what}, resident`);
        assertSame(
          outcome(() => ({ out: attentionForward(q, rk, rv, dims).out })),
          want,
          `${what}, resident`,
        );
      }
    }
    // the same refusals: a query that is not finite makes the probabilities NaN, an infinite value the
    // output; a short query is refused before anything runs
    const dims = SHAPES[3]!, next = rng(SEED);
    const q = uniform(next, dims.H * dims.D), k = uniform(next, dims.Tk * dims.KVH * dims.D);
    const bad = q.slice();
    bad[70] = NaN;
    const inf = k.slice();
    inf[5] = Infinity;
    for (const [qq, kk, vv] of [[bad, k, k], [q, k, inf], [q.subarray(1), k, k]]) {
      const want = outcome(() => ({ out: attentionForward(qq!, kk!, vv!, dims).out }));
      assert.equal(typeof want, "string");
      assertSame(
        outcome(() => ({ out: attentionOutput(qq!, kk!, vv!, dims) })),
        want,
        `refusal on ${threads}`,
      );
    }
  });
});

Deno.test("attention refuses bad dims, short inputs and non-finite values the way the reference does", async () => {
  const dims = { B: 1, Tq: 4, Tk: 4, H: 2, KVH: 1, D: 4 };
  const next = rng(SEED);
  const q = uniform(next, 32), k = uniform(next, 16), v = uniform(next, 16);
  const before = [q.slice(), k.slice(), v.slice()];
  const code = (f: () => unknown) => outcome(() => (f(), {}));
  await withThreads(() => {
    assert.match(code(() => attentionForward(q, k, v, { ...dims, KVH: 3 })) as string, /^invalid_tensor: /);
    assert.match(code(() => attentionForward(q, k, v, { ...dims, Tq: 5 })) as string, /^invalid_tensor: /);
    assert.equal(
      code(() => attentionForward(q.subarray(1), k, v, dims)),
      "invalid_tensor: Cannot attend: q has 31 elements, expected at least 32",
    );
    assert.match(
      code(() => attentionBackward(q, q, k, v, { p: new Float32Array(31) }, dims)) as string,
      /^invalid_tensor: Cannot differentiate attention: p has 31 elements/,
    );
    const nan = q.slice();
    nan[5] = NaN;
    assert.equal(
      code(() => attentionForward(nan, k, v, dims)),
      code(() => attentionForwardReference(nan, k, v, dims)),
    );
    assert.match(code(() => attentionForward(nan, k, v, dims)) as string, /^non_finite_tensor: /);
  });
  assert.deepEqual([q, k, v], before, "the inputs are unchanged");
});

Deno.test("the head's cross-entropy split by vocabulary on 1, 2 and 3 threads equals the reference bit for bit", async () => {
  // V not a multiple of any split, ignored rows, ties for the maximum, logits far apart (exponentials of 0).
  // Every case is above SOFTMAX_THREAD_MIN_WORK, so 2 and 3 threads split it; one small case stays whole.
  const cases: [number, number, string][] = [
    [5, 60013, "uniform"],
    [3, 90001, "ties"],
    [4, 70001, "spread"],
    [3, 4099, "uniform"],
  ];
  await withThreads((threads) => {
    for (const [N, V, kind] of cases) {
      const next = rng(SEED + N * V);
      const logits = uniform(next, N * V);
      if (kind === "ties") { for (let i = 0; i < logits.length; i += 7) logits[i] = 1; }
      if (kind === "spread") logits.forEach((x, i) => logits[i] = x * 2000);
      const labels = Int32Array.from({ length: N }, (_, n) => (n === 1 ? -100 : (n * 977 + 5) % V));
      const what = `${kind} N=${N} V=${V} on ${threads} threads, seed ${SEED}`;
      const pick = (r: { loss: number; rowLosses: Float32Array; dz?: Float32Array }) => ({
        loss: r.loss,
        rowLosses: r.rowLosses,
        ...(r.dz ? { dz: r.dz } : {}),
      });
      assertSame(
        outcome(() => pick(crossEntropyForwardBackward(logits, labels, N, V))),
        outcome(() => pick(crossEntropyForwardBackwardReference(logits, labels, N, V))),
        `forward and backward ${what}`,
      );
      assertSame(
        outcome(() => pick(crossEntropyForward(logits, labels, N, V))),
        outcome(() => pick(crossEntropyForwardReference(logits, labels, N, V))),
        `forward ${what}`,
      );
    }
  });
});

Deno.test("the head's cross-entropy refuses bad labels and non-finite logits as the reference does", async () => {
  const N = 2, V = 4096;
  const logits = uniform(rng(SEED), N * V), before = logits.slice();
  await withThreads(() => {
    for (const labels of [[0, V], [-1, 3], [-100, -100]]) {
      const y = Int32Array.from(labels);
      const want = outcome(() => crossEntropyForwardBackwardReference(logits, y, N, V) as never);
      assert.match(want as string, /^invalid_tensor: /);
      assert.equal(outcome(() => crossEntropyForwardBackward(logits, y, N, V) as never), want);
    }
    const inf = logits.slice();
    inf[V + 3] = Infinity;
    const y = Int32Array.from([1, 2]);
    const want = outcome(() => crossEntropyForwardBackwardReference(inf, y, N, V) as never);
    assert.match(want as string, /^non_finite_tensor: /);
    assert.equal(outcome(() => crossEntropyForwardBackward(inf, y, N, V) as never), want);
  });
  assert.deepEqual(logits, before, "the logits are unchanged");
});
