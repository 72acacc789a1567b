import assert from "node:assert/strict";
import { q8Matvec, quantiseQ8 } from "../../kernels/wasm/draft_wasm.ts";
import { ensureBytes, kernelMemory, scratchBase } from "../../kernels/wasm/kernel_memory.ts";
import { wasmMatmulThreadsDisabled, wasmMatmulThreadsReady } from "../../kernels/wasm/matmul_wasm.ts";
import { adversarial, describeDifference, firstBitDifference, rng, uniform } from "./_matmul_util.ts";

/**
 * The values `q8_matvec` (one row at a time) gives for rows [lo, hi) on the input `q8Matvec` has just
 * quantised into the scratch space (the same layout: codes at scratchBase, scales after them).
 */
function oneRowAtATime(m: ReturnType<typeof quantiseQ8>, lo: number, hi: number): Float32Array {
  const km = kernelMemory()!, K = m.cols, blocks = K / 32;
  const xq = scratchBase(), xs = xq + 2 * K, yAt = xs + 4 * blocks + 64 + 4 * m.rows + 64;
  ensureBytes(km, yAt + 4 * m.rows);
  km.draft.q8_matvec(m.weights, m.scales, xq, xs, yAt, K, lo, hi);
  return new Float32Array(km.memory.buffer, yAt + 4 * lo, hi - lo).slice();
}

Deno.test("q8Matvec four rows at a time gives q8_matvec's values row by row, on 1, 2 and 3 threads", async () => {
  assert.equal(await wasmMatmulThreadsReady(3, 120_000), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const next = rng(907);
  // row counts around multiples of four, a thread's range that starts off one, and SmolLM2's head width
  for (const [rows, K] of [[1, 32], [3, 64], [4, 64], [5, 96], [17, 576], [1003, 576], [4099, 64]] as const) {
    for (const values of [uniform, adversarial]) {
      const w = values(next, rows * K).map((v) => (Number.isFinite(v) ? v : 1));
      const x = values(next, K).map((v) => (Number.isFinite(v) ? Math.max(-1e30, Math.min(1e30, v)) : 0));
      const m = quantiseQ8(w, rows, K);
      for (const threads of [1, 2, 3]) {
        const got = new Float32Array(rows);
        q8Matvec(m, x, got, threads);
        const want = oneRowAtATime(m, 0, rows);
        const d = firstBitDifference(got, want);
        assert.equal(
          d,
          -1,
          d < 0 ? "" : `${values.name} ${rows}x${K}, ${threads} threads: ${describeDifference(got, want, d)}`,
        );
      }
      // q8_matvec4 on a range that starts and ends off a multiple of four
      if (rows >= 17) {
        const km = kernelMemory()!, yAt = scratchBase() + 2 * K + 4 * (K / 32) + 64;
        const all = oneRowAtATime(m, 0, rows);
        km.draft.q8_matvec4(m.weights, m.scales, scratchBase(), scratchBase() + 2 * K, yAt, K, 3, 14);
        const part = new Float32Array(km.memory.buffer, yAt + 12, 11);
        assert.equal(firstBitDifference(part, all.subarray(3, 14)), -1, `rows 3…13 of ${rows}`);
      }
    }
  }
});
