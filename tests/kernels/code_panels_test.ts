import assert from "node:assert/strict";
import { SHARED_INPUTS } from "../../kernels/block.ts";
import { generate, generateTokens } from "../../kernels/generation.ts";
import { halfToFloat } from "../../kernels/gguf_dequant.ts";
import { linearForward, linearForwardGroup } from "../../kernels/linear.ts";
import { matmulReference } from "../../kernels/matmul.ts";
import {
  CODE_RECORD_BYTES,
  codePanelBytes,
  type Codes,
  encodeCodes,
  NIBBLE_RECORD_BYTES,
  nibbleCodes,
  nibbleValue,
  writeCodePanels,
} from "../../kernels/wasm/code_panels.ts";
import { kernelMemory } from "../../kernels/wasm/kernel_memory.ts";
import { codeRun, panelRun } from "../../kernels/wasm/matmul_group_wasm.ts";
import {
  codedB,
  makeResident,
  packedB,
  wasmMatmulThreadsDisabled,
  wasmMatmulThreadsReady,
} from "../../kernels/wasm/matmul_wasm.ts";
import { kernelThreads, setKernelThreads } from "../../kernels/threads.ts";
import { adversarial, describeDifference, firstBitDifference, rng, uniform } from "./_matmul_util.ts";
import { q41, q41Model } from "./_code_fixture.ts";

/** How long the workers may take to start: seconds when the whole suite runs on two loaded cores. */
const STARTUP_MS = 120_000;

/** What `f` returns, or the error it throws as text. */
function outcome<T>(f: () => T): T | string {
  try {
    return f();
  } catch (e) {
    return String(e);
  }
}

/** The same bits, or the same error. */
/** A weight [N, K] as a GGUF Q8_0 import has it: per 32 values an fp16 d = amax / 127 and q in −127…127. */
function q80(bits: () => number, N: number, K: number): Float32Array {
  const w = new Float32Array(N * K);
  for (let b = 0; b < (N * K) / 32; b++) {
    const d = halfToFloat(0x1000 + (bits() % 0x2000));
    for (let i = 0; i < 32; i++) w[32 * b + i] = (i === 3 ? (b % 2 ? 127 : -127) : (bits() % 255) - 127) * d;
  }
  return w;
}

/**
 * A Q4_1 import's weight [N, K] whose first block has no nibble form: its min m = 3·2^−24 is so far below
 * its scale d = 0.5 that C = m − 16d is no float32 (it rounds to −8, and code 0 would rebuild +0, not m).
 */
function farQ41(bits: () => number, N: number, K: number): Float32Array {
  const w = q41(bits, N, K);
  for (let i = 0; i < 32; i++) w[i] = Math.fround((i % 16) * 0.5 + 3 * 2 ** -24);
  return w;
}

function same(got: Float32Array | string, want: Float32Array | string, what: string): void {
  if (typeof want === "string" || typeof got === "string") assert.equal(got, want, what);
  else sameBits(got, want, what);
}

function sameBits(got: Float32Array, want: Float32Array, what: string): void {
  const d = firstBitDifference(got, want);
  assert.equal(d, -1, d < 0 ? "" : `${what}: ${describeDifference(got, want, d)}`);
}

Deno.test("encodeCodes finds the codes of a Q4_1 import's values and refuses everything else", () => {
  const next = rng(501);
  const N = 32, K = 64, w = q41(next, N, K);
  const codes = encodeCodes(w, N, K);
  assert.ok(codes !== null);
  const fr = Math.fround;
  for (let i = 0; i < N * K; i++) {
    const b = Math.floor(i / 32);
    assert.ok(Object.is(fr(fr(codes.q[i]! * codes.d[b]!) + codes.m[b]!), w[i]), `value ${i}`);
    assert.ok(codes.q[i]! <= 15);
  }
  // a block of equal values (d = 0), and the biggest and smallest codes of 8 bits that the search can reach
  const flat = w.slice();
  flat.fill(0.375, 0, 32);
  assert.ok(encodeCodes(flat, N, K) !== null);
  // not of the form: one value one ulp off, a NaN, an infinity, ±0 mixed in a constant block
  const ulp = w.slice();
  ulp[100] = new Float32Array(new Uint32Array([new Uint32Array(ulp.buffer)[100]! + 1]).buffer)[0]!;
  assert.equal(encodeCodes(ulp, N, K), null);
  for (const bad of [NaN, Infinity, -Infinity]) {
    const x = w.slice();
    x[5] = bad;
    assert.equal(encodeCodes(x, N, K), null, `${bad}`);
  }
  const zeros = w.slice();
  zeros.fill(0, 0, 32);
  zeros[3] = -0;
  assert.equal(encodeCodes(zeros, N, K), null);
  // shapes: N not a multiple of 16, K not a multiple of 32, nothing, or a short array
  assert.equal(encodeCodes(w.subarray(0, 24 * K), 24, K), null);
  assert.equal(encodeCodes(q41(next, 16, 48), 16, 48), null);
  assert.equal(encodeCodes(new Float32Array(0), 0, 32), null);
  assert.equal(encodeCodes(w.subarray(0, N * K - 1), N, K), null);
  // trained weights are not of the form
  assert.equal(encodeCodes(uniform(next, N * K), N, K), null);
  // a Q8_0 import's values: m is the block's smallest, the codes q − q_min (0…254)
  const w8 = q80(next, N, K), codes8 = encodeCodes(w8, N, K);
  assert.ok(codes8 !== null);
  for (let i = 0; i < N * K; i++) {
    const b = Math.floor(i / 32);
    assert.ok(Object.is(fr(fr(codes8.q[i]! * codes8.d[b]!) + codes8.m[b]!), w8[i]), `Q8_0 value ${i}`);
  }
  assert.ok(Math.max(...codes8.q) > 200);
});

Deno.test("nibbleCodes rebuilds every value of a Q4_1 import from 2 + q/8, and refuses what it cannot", () => {
  const next = rng(504), fr = Math.fround;
  // v = 2 + q/8 is the float32 whose bits are 0x40000000 | q << 19, what matvec_nibbles makes of a code
  for (let q = 0; q < 16; q++) {
    assert.equal(new Float32Array(new Uint32Array([0x40000000 | (q << 19)]).buffer)[0], nibbleValue(q));
  }
  const N = 32, K = 64, w = q41(next, N, K), codes = encodeCodes(w, N, K)!;
  assert.equal(codes.form, "affine");
  const nib = nibbleCodes(codes);
  assert.ok(nib !== null);
  assert.equal(nib.form, "nibble");
  assert.deepEqual(nib.q, codes.q);
  for (let i = 0; i < N * K; i++) {
    const b = Math.floor(i / 32);
    assert.ok(Object.is(fr(fr(nibbleValue(nib.q[i]!) * nib.d[b]!) + nib.m[b]!), w[i]), `value ${i}`);
    assert.equal(nib.d[b], fr(8 * codes.d[b]!));
    assert.equal(nib.m[b], fr(codes.m[b]! - 16 * codes.d[b]!));
  }
  // the same values on half the step, codes 0…30 (what the affine search may find for a block without its
  // largest code): divided by their common divisor 2, the same nibble codes
  const halved: Codes = {
    q: codes.q.map((q) => 2 * q),
    d: codes.d.map((d) => d / 2),
    m: codes.m,
    form: "affine",
  };
  const back = nibbleCodes(halved);
  assert.ok(back !== null);
  assert.deepEqual([back.q, back.d, back.m], [nib.q, nib.d, nib.m]);
  // codes above 15 (a Q8_0 import's), a block whose C is no float32, codes already in the nibble form
  assert.equal(nibbleCodes(encodeCodes(q80(next, N, K), N, K)!), null);
  const far = encodeCodes(farQ41(next, N, K), N, K);
  assert.ok(far !== null, "the far block still has affine codes");
  assert.equal(nibbleCodes(far), null);
  assert.equal(nibbleCodes(nib), null);
});

Deno.test("writeCodePanels lays out each panel's blocks as d, m and the codes of every k-step", () => {
  const next = rng(502), N = 32, K = 64, w = q41(next, N, K), codes = encodeCodes(w, N, K)!;
  const out = new Uint8Array(codePanelBytes(N, K, "affine"));
  assert.equal(out.length, 2 * 2 * CODE_RECORD_BYTES);
  writeCodePanels(codes, N, K, out);
  const view = new DataView(out.buffer);
  // panel 1 (columns 16…31), block 1 (k 32…63): column 16 + 5, k-step 9
  const rec = (1 * 2 + 1) * 640, n = 21, k = 41;
  assert.equal(view.getFloat32(rec + 4 * 5, true), codes.d[n * 2 + 1]);
  assert.equal(view.getFloat32(rec + 64 + 4 * 5, true), codes.m[n * 2 + 1]);
  assert.equal(out[rec + 128 + 9 * 16 + 5], codes.q[n * K + k]);
  // the nibble form: D and C, then per pair of k-steps a byte a column, the even step's code low
  const nib = nibbleCodes(codes)!, packed = new Uint8Array(codePanelBytes(N, K, "nibble"));
  assert.equal(packed.length, 2 * 2 * NIBBLE_RECORD_BYTES);
  assert.equal(NIBBLE_RECORD_BYTES, 384);
  writeCodePanels(nib, N, K, packed);
  const nview = new DataView(packed.buffer), nrec = (1 * 2 + 1) * 384;
  assert.equal(nview.getFloat32(nrec + 4 * 5, true), nib.d[n * 2 + 1]);
  assert.equal(nview.getFloat32(nrec + 64 + 4 * 5, true), nib.m[n * 2 + 1]);
  assert.equal(packed[nrec + 128 + 4 * 16 + 5], codes.q[n * K + 40]! | (codes.q[n * K + k]! << 4));
});

Deno.test("one row on code panels is the reference's bits on 1, 2 and 3 threads, and the float32 panels are not read", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng(503), before = kernelThreads();
  // one matrix alone, one that is not a block quantisation's (no code panels), and a group read as one run
  const K = 576;
  const coded = q41(next, 1536, K), plainW = uniform(next, 64 * K), coded8 = q80(next, 2048, K);
  const farW = farQ41(next, 512, K);
  const group = [q41(next, 576, K), q41(next, 192, K), q41(next, 192, K)];
  const components = {
    a: {
      one: { shape: [1536, K], data: coded.slice() },
      eight: { shape: [2048, K], data: coded8.slice() },
      plain: { shape: [64, K], data: plainW.slice() },
      far: { shape: [512, K], data: farW.slice() },
    },
    b: Object.fromEntries(
      SHARED_INPUTS[0].map((n, g) => [n, { shape: [group[g]!.length / K, K], data: group[g]!.slice() }]),
    ),
  };
  makeResident(components, { together: SHARED_INPUTS });
  const one = components.a.one.data, plain = components.a.plain.data, eight = components.a.eight.data;
  const far = components.a.far.data;
  const gs = SHARED_INPUTS[0].map((n) => components.b[n]!.data), Ns = gs.map((g) => g.length / K);
  assert.equal(codedB(one, K, 1536)?.form, "nibble", "the Q4_1 matrix has nibble code panels");
  assert.equal(codedB(eight, K, 2048)?.form, "affine", "the Q8_0 matrix has affine code panels");
  assert.equal(codedB(far, K, 512)?.form, "affine", "a Q4_1 matrix with a far block has affine ones");
  assert.equal(codedB(plain, K, 64), null, "a trained matrix has none");
  const run = panelRun(gs, K, Ns)!;
  assert.equal(codeRun(gs, K, Ns, run.cols)?.form, "nibble", "the group's code panels are one run");
  // the float32 panels of the coded matrices are overwritten with NaN: a one-row product that read them
  // would be NaN (and refused); a product of more rows still reads them
  const buf = kernelMemory()!.memory.buffer;
  new Float32Array(buf, packedB(one, 1, K, 1536)!, 1536 * K).fill(NaN);
  new Float32Array(buf, packedB(eight, 1, K, 2048)!, 2048 * K).fill(NaN);
  new Float32Array(buf, packedB(far, 1, K, 512)!, 512 * K).fill(NaN);
  new Float32Array(buf, run.at, run.N * K).fill(NaN);
  try {
    for (const values of [uniform, adversarial]) {
      const x = values(next, K);
      // the same product on the weight in ordinary arrays (its bits, or the error it raises) and, where finite,
      // the reference loops' bits
      const want = (w: Float32Array, N: number) => {
        const got = outcome(() => linearForward(x, w, 1, K, N));
        if (typeof got !== "string") {
          const y = new Float32Array(N);
          matmulReference(x, w, y, 1, K, N, "nt");
          sameBits(got, y, "the ordinary arrays' product is the reference's");
        }
        return got;
      };
      for (const threads of [1, 2, 3]) {
        setKernelThreads(threads);
        const what = `${values.name}, ${threads} threads`;
        same(outcome(() => linearForward(x, one, 1, K, 1536)), want(coded, 1536), `one ${what}`);
        same(outcome(() => linearForward(x, plain, 1, K, 64)), want(plainW, 64), `plain ${what}`);
        same(outcome(() => linearForward(x, eight, 1, K, 2048)), want(coded8, 2048), `Q8_0 ${what}`);
        same(outcome(() => linearForward(x, far, 1, K, 512)), want(farW, 512), `far Q4_1 ${what}`);
        const outs = outcome(() =>
          linearForwardGroup(x, gs as [Float32Array, Float32Array, Float32Array], 1, K, [
            Ns[0]!,
            Ns[1]!,
            Ns[2]!,
          ])
        );
        const wants = group.map((g, i) => want(g, Ns[i]!));
        if (typeof outs === "string") assert.equal(outs, wants.find((w) => typeof w === "string"), what);
        else outs.forEach((y, g) => same(y, wants[g]!, `group ${g} ${what}`));
      }
    }
    // two rows read the float32 panels (NaN now), never the code panels: the refusal shows which were read
    setKernelThreads(1);
    assert.throws(() => linearForward(uniform(next, 2 * K), one, 2, K, 1536), /linear output/);
  } finally {
    setKernelThreads(before);
  }
});

Deno.test("a resident Q4_1 model generates the same tokens and logits on code panels as in ordinary arrays", async () => {
  assert.equal(await wasmMatmulThreadsReady(2, STARTUP_MS), 2, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const plain = q41Model(11), moved = q41Model(11), before = kernelThreads();
  makeResident(moved.components, { together: SHARED_INPUTS });
  const matrices = Object.values(moved.components).flatMap((c) => Object.values(c)).filter((t) =>
    t.shape.length === 2
  );
  assert.ok(matrices.every((t) => codedB(t.data, t.shape[1]!, t.shape[0]!) !== null), "every matrix coded");
  try {
    const prompt = [3, 99, 1000, 7];
    const want = generate(plain, prompt, 10);
    for (const threads of [1, 2]) {
      setKernelThreads(threads);
      const got = generate(moved, prompt, 10);
      assert.deepEqual(got.tokens, want.tokens);
      got.logits.forEach((l, i) => sameBits(l, want.logits[i]!, `token ${i}, ${threads} threads`));
      assert.deepEqual(generateTokens(moved, prompt, 10), want.tokens);
    }
  } finally {
    setKernelThreads(before);
  }
});
