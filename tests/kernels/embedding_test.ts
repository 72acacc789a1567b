import assert from "node:assert/strict";
import { embeddingBackward, embeddingForward } from "../../kernels/embedding.ts";
import { errorCode, gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("embedding backward matches finite differences and forward copies rows", () => {
  const next = rng(1);
  const V = 5, C = 3, ids = new Int32Array([4, 0, 4, 2]);
  const w = randomArray(next, V * C);
  assert.deepEqual(Array.from(embeddingForward(w, ids, V, C).subarray(0, 3)), Array.from(w.subarray(12, 15)));
  gradcheck("embedding", 1, [w], ([w]) => [embeddingForward(w!, ids, V, C)], ([dy]) => [
    embeddingBackward(dy!, ids, V, C),
  ]);
});

Deno.test("embedding rejects ids outside the vocabulary with invalid_tensor", () => {
  const w = new Float32Array(6);
  assert.equal(errorCode(() => embeddingForward(w, new Int32Array([3]), 3, 2)), "invalid_tensor");
  assert.equal(errorCode(() => embeddingForward(w, new Int32Array([-1]), 3, 2)), "invalid_tensor");
  assert.equal(errorCode(() => embeddingBackward(w, new Int32Array([3]), 3, 2)), "invalid_tensor");
});
