import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { matmul, matmulContinue, type MatmulLayout, matmulReference } from "../../kernels/matmul.ts";
import {
  THREAD_MIN_WORK,
  wasmMatmul,
  wasmMatmulThreadsDisabled,
  wasmMatmulThreadsReady,
} from "../../kernels/wasm/matmul_wasm.ts";
import {
  adversarial,
  describeDifference,
  firstBitDifference,
  LAYOUTS,
  rng,
  uniform,
} from "./_matmul_util.ts";

/** How long the workers may take to start: seconds when the whole suite runs on two loaded cores. */
const STARTUP_MS = 120_000;

/** The k range [k0, k1) of A (M×K, stored per its layout letter) as a matrix of its own, M×(k1−k0). */
function aSlice(a: Float32Array, t: string, M: number, K: number, k0: number, k1: number): Float32Array {
  const n = k1 - k0, out = new Float32Array(M * n);
  for (let i = 0; i < M; i++) {
    for (let k = k0; k < k1; k++) {
      out[t === "t" ? (k - k0) * M + i : i * n + k - k0] = a[t === "t" ? k * M + i : i * K + k]!;
    }
  }
  return out;
}

/** The k range [k0, k1) of B (K×N, stored per its layout letter) as a matrix of its own, (k1−k0)×N. */
function bSlice(b: Float32Array, t: string, K: number, N: number, k0: number, k1: number): Float32Array {
  const n = k1 - k0, out = new Float32Array(n * N);
  for (let k = k0; k < k1; k++) {
    for (let j = 0; j < N; j++) {
      out[t === "t" ? j * n + k - k0 : (k - k0) * N + j] = b[t === "t" ? j * K + k : k * N + j]!;
    }
  }
  return out;
}

/** The continuation written out element by element: acc = C[i,j], then k ascending, a rounding after each. */
function continuedByDefinition(
  a: Float32Array,
  b: Float32Array,
  c0: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout,
): Float32Array {
  const fr = Math.fround, out = new Float32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let acc = c0[i * N + j]!;
      for (let k = 0; k < K; k++) {
        const x = layout[0] === "t" ? a[k * M + i]! : a[i * K + k]!;
        const y = layout[1] === "t" ? b[j * K + k]! : b[k * N + j]!;
        acc = fr(acc + fr(x * y));
      }
      out[i * N + j] = acc;
    }
  }
  return out;
}

function assertSameBits(got: Float32Array, want: Float32Array, what: string): void {
  const d = firstBitDifference(got, want);
  assert.equal(d, -1, d < 0 ? "" : `${what}: ${describeDifference(got, want, d)}`);
}

Deno.test("a product split over K into matmul then matmulContinue is one matmul's bits, on 1, 2 and 3 threads", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng(1709);
  // ragged M and N (partial 3-row tiles, partial 12-column panels and 96-column groups), K past the kernel's
  // 256-step block on either side of the split, and splits at 0, 1 and K (one piece empty)
  const cases: [number, number, number, number][] = [
    [37, 700, 97, 300],
    [5, 600, 101, 1],
    [64, 520, 200, 256],
    [7, 333, 130, 0],
    [31, 90, 193, 90],
    [2, 1200, 300, 601],
  ];
  for (const [M, K, N, K1] of cases) {
    assert.ok(M * (K - K1) * N >= THREAD_MIN_WORK || M * K1 * N >= THREAD_MIN_WORK, "a case runs on threads");
    for (const values of [uniform, adversarial]) {
      const a = values(next, M * K), b = values(next, K * N);
      for (const layout of LAYOUTS) {
        const whole = new Float32Array(M * N);
        matmulReference(a, b, whole, M, K, N, layout);
        const a1 = aSlice(a, layout[0]!, M, K, 0, K1), a2 = aSlice(a, layout[0]!, M, K, K1, K);
        const b1 = bSlice(b, layout[1]!, K, N, 0, K1), b2 = bSlice(b, layout[1]!, K, N, K1, K);
        for (const threads of [1, 2, 3]) {
          const out = new Float32Array(M * N);
          wasmMatmul(a1, b1, out, M, K1, N, layout, threads);
          wasmMatmul(a2, b2, out, M, K - K1, N, layout, threads, false, true);
          assertSameBits(
            out,
            whole,
            `${values.name} ${layout} ${M}x${K}x${N} split at ${K1}, ${threads} threads`,
          );
        }
        const out = new Float32Array(M * N);
        matmul(a1, b1, out, M, K1, N, layout);
        matmulContinue(a2, b2, out, M, K - K1, N, layout);
        assertSameBits(out, whole, `matmulContinue ${values.name} ${layout} ${M}x${K}x${N} split at ${K1}`);
      }
    }
  }
});

Deno.test("matmulContinue continues from any value C holds, edges, ±0, NaN and infinities included, on both paths", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng(4242);
  // [2, 3, 5] is below WASM_MIN_WORK: the reference loops' continuation
  for (const [M, K, N] of [[2, 3, 5], [37, 100, 97], [5, 600, 101], [3, 512, 12], [4, 300, 13]] as const) {
    for (const layout of LAYOUTS) {
      const a = adversarial(next, M * K), b = adversarial(next, K * N);
      const c0 = adversarial(next, M * N);
      c0[0] = NaN;
      c0[M * N - 1] = -Infinity;
      if (M * N > 2) c0[1] = -0;
      const want = continuedByDefinition(a, b, c0, M, K, N, layout);
      for (const threads of [1, 2, 3]) {
        const out = c0.slice();
        const finite = wasmMatmul(a, b, out, M, K, N, layout, threads, true, true);
        assertSameBits(out, want, `${layout} ${M}x${K}x${N}, ${threads} threads`);
        assert.equal(finite, want.every(Number.isFinite), "the finiteness check sees the continued sums");
      }
      const out = c0.slice();
      assert.equal(matmulContinue(a, b, out, M, K, N, layout, true), false); // c0 holds NaN
      assertSameBits(out, want, `matmulContinue ${layout} ${M}x${K}x${N}`);
    }
  }
  // K = 0: C is left as it is (an empty continuation adds nothing)
  const c0 = uniform(next, 6), out = c0.slice();
  assert.equal(matmulContinue(new Float32Array(0), new Float32Array(0), out, 2, 0, 3, "nn", true), true);
  assertSameBits(out, c0, "K = 0");
});

Deno.test("matmulContinue refuses what matmul refuses, before writing anything", () => {
  const out = new Float32Array([1, 2, 3, 4]);
  assert.throws(
    () => matmulContinue(new Float32Array(3), new Float32Array(6), out, 2, 2, 2),
    (e) =>
      e instanceof ProtocolError && e.code === "invalid_tensor" &&
      /a has 3 elements, expected at least 4/.test(e.message),
  );
  assert.throws(
    () => matmulContinue(out, new Float32Array(4), out, 2, 2, 2),
    (e) => e instanceof ProtocolError && e.message === "Cannot multiply matrices: out overlaps an input",
  );
  assert.deepEqual([...out], [1, 2, 3, 4]);
});
