import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import type { Tensors } from "../../kernels/safetensors.ts";
import { applyUpdate, applyUpdateInPlace } from "../../kernels/stage.ts";

const fr = Math.fround;

function component(values: number[]): Tensors {
  return { "x.weight": { shape: [values.length], data: Float32Array.from(values) } };
}

Deno.test("SGD: each value is fround(w − fround(η·g)) with η = fround(lr·scale), in place or not", () => {
  const w = [1, -2.5, 3e-8, 0.1, -0], g = [0.5, -0.25, 1e30, 7, 0];
  const eta = fr(0.01 * 0.75);
  const want = Float32Array.from(w, (v, i) => fr(v - fr(eta * g[i]!)));
  const fresh = applyUpdate(
    ["block_000"],
    { block_000: component(w) },
    { block_000: component(g) },
    0.01,
    0.75,
  );
  const grads = { block_000: component(g) };
  const inPlace = applyUpdateInPlace(["block_000"], { block_000: component(w) }, grads, 0.01, 0.75);
  for (const r of [fresh, inPlace]) {
    assert.deepEqual(new Uint32Array(r.block_000!["x.weight"]!.data.buffer), new Uint32Array(want.buffer));
  }
  assert.equal(
    inPlace.block_000!["x.weight"]!.data,
    grads.block_000["x.weight"]!.data,
    "in place: the gradient's array",
  );
});

Deno.test("SGD refuses an update that is not finite, naming the first such element, as assertFinite does", () => {
  const w = [1, 2, 3, -3e38, 5, -3e38], g = [0, 0, 0, 1e38, 0, 1e38]; // elements 3 and 5 overflow to −Infinity
  for (const update of [applyUpdate, applyUpdateInPlace]) {
    const grads = { block_000: component(g) };
    assert.throws(
      () => update(["block_000"], { block_000: component(w) }, grads, 10, 1),
      (e: unknown) =>
        e instanceof ProtocolError && e.code === "non_finite_tensor" &&
        e.message === "Cannot use updated block_000 x.weight: element 3 is -Infinity",
    );
  }
});
