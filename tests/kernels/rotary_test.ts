import assert from "node:assert/strict";
import { rotaryBackward, rotaryForward, rotaryTables } from "../../kernels/rotary.ts";
import { errorCode, gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("rotary keeps position 0 unchanged and its backward matches finite differences", () => {
  const B = 2, T = 3, heads = 2, D = 4;
  const tables = rotaryTables(T, D, 10000);
  const next = rng(4);
  const x = randomArray(next, B * T * heads * D);
  const y = rotaryForward(x, tables, B, T, heads, D);
  assert.deepEqual(Array.from(y.subarray(0, heads * D)), Array.from(x.subarray(0, heads * D)));
  assert.deepEqual(Array.from(y.subarray(T * heads * D, T * heads * D + 8)), Array.from(x.subarray(24, 32)));
  gradcheck("rotary", 4, [x], ([x]) => [rotaryForward(x!, tables, B, T, heads, D)], ([dy]) => [
    rotaryBackward(dy!, tables, B, T, heads, D),
  ]);
  assert.equal(errorCode(() => rotaryForward(x, tables, B, T, heads, D, 1)), "invalid_tensor");
});
