import assert from "node:assert/strict";
import {
  gatedProduct,
  gatedProductBackward,
  gatedProductBackwardReference,
  gatedProductReference,
  mlpBackward,
  mlpForward,
} from "../../kernels/mlp.ts";
import { wasmSilu, wasmSiluBackward } from "../../kernels/wasm/softmax_wasm.ts";
import { adversarial, firstBitDifference, rng as intRng } from "./_matmul_util.ts";
import { gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("mlp backward matches finite differences", () => {
  const next = rng(7);
  const N = 2, C = 3, M = 4;
  const x = randomArray(next, N * C), gate = randomArray(next, M * C), up = randomArray(next, M * C);
  const down = randomArray(next, C * M);
  gradcheck(
    "mlp",
    7,
    [x, gate, up, down],
    ([x, gate, up, down]) => [mlpForward(x!, { gate: gate!, up: up!, down: down! }, N, C, M).y],
    ([dy]) => {
      const w = { gate, up, down };
      const { cache } = mlpForward(x, w, N, C, M);
      const g = mlpBackward(dy!, x, w, cache, N, C, M);
      return [g.dx, g.dGate, g.dUp, g.dDown];
    },
  );
});

Deno.test("the gated product on the kernel threads is the reference loop's bits on 1, 2 and 3 threads", () => {
  const next = intRng(29);
  for (const n of [1, 1023, 4096, 98_304 + 3]) {
    const g = adversarial(next, n), u = adversarial(next, n);
    // Values where the sigmoid saturates, overflows exp64 or is exactly 1/2, and the signed zeros.
    g.set([0, -0, 710, -710, 745, -745, 88.7, -88.7, 1e-40, -1e-40, 3.4e38, -3.4e38].slice(0, n));
    const want = gatedProductReference(g, u);
    for (const threads of [1, 2, 3]) {
      const got = wasmSilu(g, u, threads)!;
      assert.equal(firstBitDifference(got, want), -1, `n ${n} ${threads} threads`);
    }
    assert.equal(firstBitDifference(gatedProduct(g, u), want), -1, `n ${n}`);
  }
});

Deno.test("the gated product's backward on the kernel threads is the reference loop's bits on 1, 2 and 3 threads", () => {
  const next = intRng(31);
  for (const n of [1, 1023, 4096, 98_304 + 3]) {
    const g = adversarial(next, n), u = adversarial(next, n), dh = adversarial(next, n);
    g.set([0, -0, 710, -710, 745, -745, 88.7, -88.7, 1e-40, -1e-40, 3.4e38, -3.4e38].slice(0, n));
    const want = gatedProductBackwardReference(g, u, dh);
    for (const threads of [1, 2, 3]) {
      const got = wasmSiluBackward(g, u, dh, threads)!;
      assert.equal(firstBitDifference(got.du, want.du), -1, `du n ${n} ${threads} threads`);
      assert.equal(firstBitDifference(got.dg, want.dg), -1, `dg n ${n} ${threads} threads`);
    }
    const auto = gatedProductBackward(g, u, dh);
    assert.equal(firstBitDifference(auto.du, want.du), -1, `n ${n}`);
    assert.equal(firstBitDifference(auto.dg, want.dg), -1, `n ${n}`);
  }
});
