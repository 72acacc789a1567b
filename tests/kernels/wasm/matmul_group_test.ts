import assert from "node:assert/strict";
import { linearForward, linearForwardGroup } from "../../../kernels/linear.ts";
import { matmulGroupFinite, matmulReference } from "../../../kernels/matmul.ts";
import { isResident } from "../../../kernels/wasm/kernel_memory.ts";
import { panelRun, wasmMatmulGroup } from "../../../kernels/wasm/matmul_group_wasm.ts";
import type { Tensors } from "../../../kernels/safetensors.ts";
import { makeResident } from "../../../kernels/wasm/matmul_wasm.ts";
import { adversarial, describeDifference, firstBitDifference, rng, seeds, uniform } from "../_matmul_util.ts";

/**
 * Each weight [N,K] in an ordinary array, and resident with its panels prepacked (`makeResident`) three ways:
 * as one run in the group's order, as one run in the reverse order, and apart (another matrix between each).
 */
function weights(next: () => number, K: number, Ns: readonly number[]) {
  const plain = Ns.map((N) => uniform(next, N * K)); // w_g: [N_g,K]
  const names = plain.map((_, g) => `w${g}`);
  const resident = (together: string[], spaced: boolean) => {
    const layer: Tensors = {};
    plain.forEach((w, g) => {
      layer[names[g]!] = { shape: [Ns[g]!, K], data: w.slice() };
      if (spaced) layer[`spacer${g}`] = { shape: [1, K], data: new Float32Array(K) };
    });
    makeResident({ layer }, { together: [together] });
    const ws = names.map((n) => layer[n]!.data);
    assert.ok(ws.every((w) => isResident(w)));
    return ws;
  };
  return {
    plain,
    run: resident(names, false),
    reversed: resident([...names].reverse(), false),
    apart: resident([], true),
  };
}

// Shapes: one row (the matvec on prepacked panels, the matmul on plain weights) and several row tiles; K and
// N below 4, not multiples of 4 or 12, and a multiple of 96; widths that differ within a group (k and v
// narrower than q), with splits across threads from 2^18 multiply-adds and single jobs below.
const SHAPES: readonly (readonly [number, number, readonly number[]])[] = [
  [1, 576, [576, 192, 192]],
  [1, 37, [29, 13, 5]],
  [1, 3, [1000, 2]],
  [1, 577, [1539, 1539]],
  [2, 101, [250, 47]],
  [7, 300, [611, 96, 61]],
  [64, 576, [576, 192, 192]],
  [64, 257, [1536, 1536]],
  [33, 2, [130, 7]],
];

Deno.test("a group of matmuls on one A gives each the reference's bits, on 1, 2 and 3 threads", () => {
  for (const seed of seeds([91, 92])) {
    const next = rng(seed);
    for (const [M, K, Ns] of SHAPES) {
      const { plain, run, reversed, apart } = weights(next, K, Ns);
      assert.deepEqual(
        panelRun(run, K, Ns)?.cols,
        Ns.map((_, g) => 12 * Ns.slice(0, g).reduce((s, n) => s + Math.ceil(n / 12), 0)),
      );
      assert.ok(panelRun(reversed, K, Ns) !== null && (Ns.length === 1 || panelRun(apart, K, Ns) === null));
      const a = seed % 2 === 0 ? uniform(next, M * K) : adversarial(next, M * K); // a: [M,K]
      const want = plain.map((w, g) => {
        const y = new Float32Array(M * Ns[g]!);
        matmulReference(a, w, y, M, K, Ns[g]!, "nt");
        return y;
      });
      const ways = { plain, run, reversed, apart, mixed: [run[0]!, ...plain.slice(1)] };
      for (const [name, bs] of Object.entries(ways)) {
        for (const threads of [1, 2, 3]) {
          const outs = Ns.map((N) => new Float32Array(M * N).fill(-9));
          const finite = wasmMatmulGroup(a, bs, outs, M, K, Ns, threads, true);
          outs.forEach((got, g) => {
            const i = firstBitDifference(got, want[g]!);
            const at = `seed ${seed} ${name} ${M}x${K}x[${Ns}] ${threads} threads, output ${g}`;
            assert.equal(i, -1, `${at}: ${i < 0 ? "" : describeDifference(got, want[g]!, i)}`);
            assert.equal(finite[g], want[g]!.every(Number.isFinite), `${at}: finite`);
          });
        }
      }
      [run, reversed, apart].forEach((ws) => ws.forEach((w, g) => assert.deepEqual(w, plain[g]))); // read only
    }
  }
});

Deno.test("linearForwardGroup gives the bits of linearForward per layer and throws the first one's error", () => {
  const next = rng(95);
  const C = 96, KV = 32, T = 5;
  const { run: resident } = weights(next, C, [C, KV, KV]);
  const x = uniform(next, T * C); // x: [T,C]
  const ys = linearForwardGroup(x, resident, T, C, [C, KV, KV]);
  ys.forEach((y, g) =>
    assert.equal(firstBitDifference(y, linearForward(x, resident[g]!, T, C, y.length / T)), -1)
  );
  const bad = x.slice();
  bad[3] = Infinity; // every output of row 0 is ±Infinity or NaN
  assert.throws(() => linearForwardGroup(bad, resident, T, C, [C, KV, KV]), {
    name: "ProtocolError",
    code: "non_finite_tensor",
    message: /linear output/,
  });
  assert.throws(() => matmulGroupFinite(x, resident, ys.slice(1), T, C, [C, KV, KV]), {
    message: "Cannot multiply a group of matrices: 3 B, 2 outputs and 3 widths",
  });
});
