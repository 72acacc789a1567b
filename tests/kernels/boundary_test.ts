import assert from "node:assert/strict";
import { runningNorms, totalFromRunning } from "../../kernels/boundary.ts";
import type { Tensors } from "../../kernels/safetensors.ts";
import { normSquared } from "../../kernels/stage.ts";

function grads(names: readonly string[], seed: number): Record<string, Tensors> {
  let s = seed >>> 0;
  const rand = (n: number) =>
    Float32Array.from(
      { length: n },
      () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5) * 3,
    );
  return Object.fromEntries(
    names.map((n) => [n, { b: { shape: [777], data: rand(777) }, a: { shape: [41], data: rand(41) } }]),
  );
}

Deno.test("totalFromRunning is normSquared bit for bit for every partition order, running or not", () => {
  const partitions = [
    ["embed", "norm", "block_000", "block_001", "block_002"], // stage 0: the running sums are the total
    ["block_003", "block_004"], // a later stage: blocks only
    ["embed", "norm"], // stage 0 without blocks
    ["norm", "block_000"], // no embed first: the running sums skip norm, so the total is summed again
    ["embed", "block_000", "norm"], // a non-block after a block: summed again
    [],
  ];
  for (const [i, partition] of partitions.entries()) {
    const g = grads(partition, 11 + i);
    const total = totalFromRunning(partition, g, runningNorms(partition, g));
    assert.ok(Object.is(total, normSquared(partition, g)), `${JSON.stringify(partition)}: ${total}`);
  }
});

Deno.test("totalFromRunning takes the running sums' last value when their order is the partition's", () => {
  const partition = ["block_000", "block_001"], g = grads(partition, 5);
  // Running sums that are not this gradient's show which value is returned: the last one, not a new sum.
  assert.equal(totalFromRunning(partition, g, { head: null, blocks: [1.5, 2.5] }), 2.5);
  assert.equal(
    totalFromRunning(["embed", "norm"], grads(["embed", "norm"], 6), { head: 4.5, blocks: [] }),
    4.5,
  );
  // Out of order: summed again, whatever the running sums say.
  const odd = ["norm", "block_000"], h = grads(odd, 7);
  assert.equal(totalFromRunning(odd, h, { head: null, blocks: [9] }), normSquared(odd, h));
});
