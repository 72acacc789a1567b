import assert from "node:assert/strict";
import { SHARED_INPUTS } from "../../kernels/block.ts";
import { PRESETS } from "../../kernels/config.ts";
import { Q8Drafter } from "../../kernels/draft.ts";
import { generateDrafted } from "../../kernels/draft_verify.ts";
import { generate } from "../../kernels/generation.ts";
import { matmulReference } from "../../kernels/matmul.ts";
import { initModel } from "../../kernels/model.ts";
import {
  allocResident,
  isResident,
  kernelMemory,
  residentFloat32,
} from "../../kernels/wasm/kernel_memory.ts";
import { makeResident, packedB, wasmMatmul } from "../../kernels/wasm/matmul_wasm.ts";
import { panelRun } from "../../kernels/wasm/matmul_group_wasm.ts";
import { adversarial, firstBitDifference, LAYOUTS, rng, uniform } from "./_matmul_util.ts";

function resident(x: Float32Array): Float32Array {
  const km = kernelMemory()!;
  const view = residentFloat32(km, allocResident(km, x.byteLength), x.length);
  view.set(x);
  return view;
}

Deno.test("matmul reads resident A and B in place and gives the same bits as copied ones, on 1 and 2 threads", () => {
  const next = rng(81);
  for (const [M, K, N] of [[5, 37, 29], [33, 200, 130], [2, 700, 400]] as const) {
    const a = adversarial(next, M * K), b = uniform(next, K * N);
    const ra = resident(a), rb = resident(b);
    assert.ok(isResident(ra) && isResident(rb) && !isResident(a));
    for (const layout of LAYOUTS) {
      const want = new Float32Array(M * N);
      matmulReference(a, b, want, M, K, N, layout);
      for (const [x, y] of [[ra, b], [a, rb], [ra, rb]] as const) {
        for (const threads of [1, 2]) {
          const got = new Float32Array(M * N);
          wasmMatmul(x, y, got, M, K, N, layout, threads);
          assert.equal(firstBitDifference(got, want), -1, `${layout} ${M}x${K}x${N} ${threads} threads`);
        }
      }
    }
    assert.deepEqual(ra, a); // read, never written
  }
});

for (const together of [[], SHARED_INPUTS]) {
  Deno.test(`a resident model generates the same tokens and logits as the same model in ordinary arrays, ${together.length} groups packed together`, () => {
    const plain = initModel(PRESETS.devnet, 8), moved = initModel(PRESETS.devnet, 8);
    for (const m of [plain, moved]) {
      for (const c of Object.values(m.components)) {
        for (const t of Object.values(c)) t.data.forEach((v, i) => t.data[i] = Math.fround(v * 6));
      }
    }
    const matrices = Object.values(moved.components).flatMap((c) => Object.values(c)).filter((t) =>
      t.shape.length === 2
    );
    const bytes = makeResident(moved.components, { together });
    // Each matrix [R, C] is moved (R·C floats) and packed for y = x·Wᵀ (ceil(R/12)·12·C floats).
    assert.equal(
      bytes,
      matrices.reduce((n, t) => n + t.data.byteLength + Math.ceil(t.shape[0]! / 12) * 48 * t.shape[1]!, 0),
    );
    assert.ok(isResident(moved.components.embed!["embed_tokens.weight"]!.data));
    assert.equal(makeResident(moved.components), 0); // already resident
    const prompt = [3, 99, 1000, 7];
    const want = generate(plain, prompt, 12);
    const got = generateDrafted(moved, prompt, 12, { drafter: new Q8Drafter(moved) });
    assert.deepEqual(got.tokens, want.tokens);
    got.logits.forEach((l, i) => assert.equal(firstBitDifference(l, want.logits[i]!), -1, `token ${i}`));
    const block = moved.components.block_000!, K = PRESETS.devnet.hidden_size;
    for (const group of together) {
      const ws = group.map((n) => block[n]!.data), Ns = group.map((n) => block[n]!.shape[0]!);
      assert.ok(panelRun(ws, K, Ns) !== null, `${group} packed as one run`);
    }
  });
}

Deno.test("a prepacked resident weight gives the reference's bits as B of y = x·Wᵀ, and is packed per call otherwise", () => {
  const next = rng(83);
  // N: a multiple of 96, of 12 only, neither; M from one row (decode, the matvec: four panels a quarter of
  // the range apart at a time, four k-steps an iteration then the last K mod 4, then the whole panels left
  // over one at a time, then a partial one; split across threads from 2^18 multiply-adds, with thread ranges
  // that end between groups of four panels) to several row tiles; K odd, K mod 4 = 0..3, K below 4.
  for (
    const [M, K, N] of [
      [1, 64, 192],
      [1, 37, 29],
      [1, 300, 1000],
      [1, 576, 1536],
      [1, 1, 60],
      [1, 2, 47],
      [1, 3, 108],
      [1, 5, 13],
      [1, 6, 96],
      [1, 1539, 611],
      [1, 577, 1152],
      [7, 101, 250],
      [64, 96, 1000],
      [4, 576, 1536],
    ] as const
  ) {
    const x = adversarial(next, M * K), w = uniform(next, N * K); // w: [N,K]
    const parts = { layer: { w: { shape: [N, K], data: w.slice() } } };
    assert.ok(makeResident(parts) > N * K * 4);
    const rw = parts.layer.w.data;
    assert.ok(isResident(rw));
    for (const layout of LAYOUTS) { // "nt" and "tt" read the packed panels, "nn" and "tn" pack per call
      const [m, k, n] = layout[1] === "t" ? [M, K, N] : [M, N, K]; // as [K,N], w is [N,K] read the other way
      const a = layout[1] === "t" ? x : adversarial(next, M * N);
      const want = new Float32Array(m * n);
      matmulReference(a, w, want, m, k, n, layout);
      assert.equal(packedB(rw, layout[1] === "t" ? 1 : 0, k, n) !== null, layout[1] === "t", layout);
      for (const threads of [1, 2, 3]) {
        const got = new Float32Array(m * n);
        wasmMatmul(a, rw, got, m, k, n, layout, threads);
        assert.equal(firstBitDifference(got, want), -1, `${layout} ${m}x${k}x${n} ${threads} threads`);
      }
    }
    assert.deepEqual(rw, w); // read, never written
  }
});
