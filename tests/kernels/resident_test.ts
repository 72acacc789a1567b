import assert from "node:assert/strict";
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
import { makeResident, wasmMatmul } from "../../kernels/wasm/matmul_wasm.ts";
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

Deno.test("a resident model generates the same tokens and logits as the same model in ordinary arrays", () => {
  const plain = initModel(PRESETS.devnet, 8), moved = initModel(PRESETS.devnet, 8);
  for (const m of [plain, moved]) {
    for (const c of Object.values(m.components)) {
      for (const t of Object.values(c)) t.data.forEach((v, i) => t.data[i] = Math.fround(v * 6));
    }
  }
  const bytes = makeResident(moved.components);
  assert.equal(
    bytes,
    Object.values(moved.components).flatMap((c) => Object.values(c)).filter((t) => t.shape.length === 2)
      .reduce((n, t) => n + t.data.byteLength, 0),
  );
  assert.ok(isResident(moved.components.embed!["embed_tokens.weight"]!.data));
  assert.equal(makeResident(moved.components), 0); // already resident
  const prompt = [3, 99, 1000, 7];
  const want = generate(plain, prompt, 12);
  const got = generateDrafted(moved, prompt, 12, { drafter: new Q8Drafter(moved) });
  assert.deepEqual(got.tokens, want.tokens);
  got.logits.forEach((l, i) => assert.equal(firstBitDifference(l, want.logits[i]!), -1, `token ${i}`));
});
