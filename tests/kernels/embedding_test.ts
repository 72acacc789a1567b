import assert from "node:assert/strict";
import { embeddingBackward, embeddingBackwardRows, embeddingForward } from "../../kernels/embedding.ts";
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

Deno.test("embeddingBackwardRows are the non-zero rows of embeddingBackward, bit for bit", () => {
  const next = rng(7);
  const V = 9, C = 4, ids = new Int32Array([3, 0, 3, 8, 3]);
  const dy = randomArray(next, ids.length * C);
  dy[0] = -0; // a -0 summed into +0 stays +0 in both
  const dense = embeddingBackward(dy, ids, V, C);
  const rows = embeddingBackwardRows(dy, ids, V, C);
  assert.deepEqual([...rows.keys()], [3, 0, 8]);
  for (let v = 0; v < V; v++) {
    const want = dense.slice(v * C, (v + 1) * C);
    const got = rows.get(v) ?? new Float32Array(C);
    assert.deepEqual(new Uint32Array(got.slice().buffer), new Uint32Array(want.buffer), `row ${v}`);
  }
  assert.equal(errorCode(() => embeddingBackwardRows(dy, new Int32Array([9]), V, C)), "invalid_tensor");
});
