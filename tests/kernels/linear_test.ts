import assert from "node:assert/strict";
import { linearBackward, linearForward } from "../../kernels/linear.ts";
import { matmulReference } from "../../kernels/matmul.ts";
import { gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("linear backward matches finite differences", () => {
  const next = rng(3);
  const N = 3, I = 4, O = 2;
  const x = randomArray(next, N * I), w = randomArray(next, O * I);
  gradcheck("linear", 3, [x, w], ([x, w]) => [linearForward(x!, w!, N, I, O)], ([dy]) => {
    const g = linearBackward(dy!, x, w, N, I, O);
    return [g.dx, g.dw];
  });
});

Deno.test("linear output is the reference's bits, and an output that overflows is non_finite_tensor naming its first element", () => {
  const next = rng(29);
  // large enough for the WebAssembly path (its finiteness check is one SIMD pass over C), and small
  for (const [N, I, O] of [[64, 96, 37], [5, 33, 97], [2, 3, 4]] as const) {
    const x = randomArray(next, N * I), w = randomArray(next, O * I);
    const want = new Float32Array(N * O);
    matmulReference(x, w, want, N, I, O, "nt");
    assert.deepEqual(new Uint32Array(linearForward(x, w, N, I, O).buffer), new Uint32Array(want.buffer));
    // w = 2·I on its first min(I, O) rows, x row r with 3e38 at column j: only y[r, j] overflows (to +Infinity)
    const eye = new Float32Array(O * I);
    for (let j = 0; j < Math.min(I, O); j++) eye[j * I + j] = 2;
    const at: [number, number][] = [[0, 0], [N - 1, Math.min(I, O) - 1], [N >> 1, 1], [1, 2]];
    for (const [r, j] of at) {
      const xs = new Float32Array(N * I).fill(0.5);
      xs[r * I + j] = 3e38;
      if (r > 0) xs[(r - 1) * I + j] = -3e38; // an earlier row overflows too, to -Infinity: it is the one named
      const before = xs.slice(), wBefore = eye.slice();
      const first = r > 0 ? (r - 1) * O + j : j;
      assert.throws(
        () => linearForward(xs, eye, N, I, O),
        (e: Error & { code?: string }) =>
          e.code === "non_finite_tensor" &&
          e.message === `Cannot use linear output: element ${first} is ${r > 0 ? -Infinity : Infinity}`,
        `${N}x${I}x${O} at ${r},${j}`,
      );
      assert.deepEqual(xs, before);
      assert.deepEqual(eye, wBefore);
    }
  }
});
