import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import {
  EMBED_TASK_ELEMENTS,
  embeddingBackward,
  embeddingBackwardRows,
  embeddingForward,
  embeddingGradient,
} from "../../kernels/embedding.ts";
import { sharedBytes, taskPoolDisabled, taskWorkers } from "../../kernels/task_pool.ts";
import { setKernelThreads } from "../../kernels/threads.ts";
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

function shared(n: number): Float32Array {
  return new Float32Array(sharedBytes(4 * n).buffer);
}

function bits(x: Float32Array): Uint32Array {
  return new Uint32Array(x.buffer, x.byteOffset, x.length);
}

Deno.test("embeddingGradient is fround(head + lookup) element by element, bit for bit, on 1-3 threads", () => {
  const V = 4099, C = 771, n = V * C; // 3 whole +0 tasks and a ragged last one
  const next = rng(11);
  const head = randomArray(next, n);
  for (let i = 0; i < n; i += 97) head[i] = -0; // -0 in rows used and unused
  for (let k = EMBED_TASK_ELEMENTS; k < n; k += EMBED_TASK_ELEMENTS) head[k - 1] = head[k] = -0; // each range's ends
  head[n - 1] = -0;
  const row = Math.floor(EMBED_TASK_ELEMENTS / C); // a used row across the first range boundary
  const ids = new Int32Array([row, 0, V - 1, row, 5, 0]);
  const dy = randomArray(next, ids.length * C);
  dy[3] = -0; // a -0 summed into a row from +0
  const lookup = embeddingBackward(dy, ids, V, C);
  const want = new Float32Array(n); // the definition, one sum per element
  for (let i = 0; i < n; i++) want[i] = Math.fround(head[i]! + lookup[i]!);
  const rows = embeddingBackwardRows(dy, ids, V, C);
  try {
    for (const threads of [1, 2, 3]) {
      setKernelThreads(threads);
      const into = shared(n);
      into.fill(7);
      const sharedHead = shared(n);
      sharedHead.set(head);
      assert.deepEqual(
        bits(embeddingGradient(sharedHead, rows, V, C, into)),
        bits(want),
        `threads ${threads}`,
      );
      assert.deepEqual(bits(embeddingGradient(sharedHead, rows, V, C, sharedHead)), bits(want), "in place");
      const plain = Float32Array.from(head);
      assert.deepEqual(bits(embeddingGradient(plain, rows, V, C, plain)), bits(want), "plain memory");
    }
    if (taskPoolDisabled() === null) assert.ok(taskWorkers() >= 1);
    const big = Float32Array.from(dy);
    big[1] = 3e38; // position 0 (id `row`), column 1
    const bigRows = embeddingBackwardRows(big, ids, V, C);
    const refused = (
      at: number,
      lookupRows: Map<number, Float32Array>,
      change: (h: Float32Array) => void,
    ) => {
      const h = shared(n);
      h.set(head);
      change(h);
      assert.throws(
        () => embeddingGradient(h, lookupRows, V, C, h),
        (e: unknown) =>
          e instanceof ProtocolError && e.code === "non_finite_tensor" &&
          e.message.startsWith(`Cannot use embedding gradient: element ${at} is `),
      );
    };
    for (const threads of [1, 2]) {
      setKernelThreads(threads);
      refused(n - 2, rows, (h) => h[n - 2] = NaN); // an unused row
      refused(row * C + 1, bigRows, (h) => h[row * C + 1] = 3e38); // a used row's sum overflows
      refused(row * C + 1, rows, (h) => (h[row * C + 1] = -Infinity, h[2 * EMBED_TASK_ELEMENTS] = NaN)); // the first
    }
  } finally {
    setKernelThreads(1);
  }
});
