import { mlpBackward, mlpForward } from "../../kernels/mlp.ts";
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
