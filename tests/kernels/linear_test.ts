import { linearBackward, linearForward } from "../../kernels/linear.ts";
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
