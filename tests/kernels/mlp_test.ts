import assert from "node:assert/strict";
import {
  gatedProduct,
  gatedProductBackward,
  gatedProductBackwardReference,
  gatedProductReference,
  mlpBackward,
  mlpForward,
} from "../../kernels/mlp.ts";
import { wasmSilu, wasmSiluBackward, wasmSiluChecked } from "../../kernels/wasm/softmax_wasm.ts";
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

Deno.test("a gated product that overflows is non_finite_tensor naming its first element, on the kernels as in the loop", () => {
  const next = rng(41);
  for (const n of [1024, 1027, 4099]) {
    const g = randomArray(next, n, 4), u = randomArray(next, n);
    for (const threads of [1, 2]) assert.equal(wasmSiluChecked(g, u, threads)!.finite, true);
    for (const at of [0, n >> 1, n - 1]) {
      const ub = u.slice();
      ub[at] = 3e38; // g·σ(g) ≈ 3.93 there (g = 4): h = +Infinity
      g[at] = 4;
      if (at > 0) [g[at - 1], ub[at - 1]] = [4, -3e38]; // an earlier -Infinity is the one named
      for (const threads of [1, 2]) {
        assert.equal(wasmSiluChecked(g, ub, threads)!.finite, false, `${n} ${at}`);
      }
      const un = u.slice();
      un[at] = NaN;
      assert.equal(wasmSiluChecked(g, un)!.finite, false);
      const first = gatedProductReference(g, ub).findIndex((v) => !Number.isFinite(v));
      assert.equal(first, at > 0 ? at - 1 : at);
      // mlpForward: C = 1, gate = g and up = ub as weights (x = 1), down = 1: h is gatedProduct(g, ub)
      const w = { gate: g, up: ub, down: new Float32Array(n).fill(1) };
      const before = [g.slice(), ub.slice()];
      assert.throws(
        () => mlpForward(new Float32Array([1]), w, 1, 1, n),
        (e: Error & { code?: string }) =>
          e.code === "non_finite_tensor" &&
          e.message === `Cannot use mlp hidden: element ${first} is ${gatedProductReference(g, ub)[first]}`,
      );
      assert.deepEqual([g, ub], before);
    }
  }
});
