/**
 * Test helper: compares an op's backward with float64 central finite differences of its float32 forward.
 *
 * The scalar checked is L = Σ c·y over every output y with fixed random weights c, summed in float64; the
 * analytic gradient is the backward given dy = c. Each input element is moved by ±h (rounded to float32 as
 * stored) and the difference quotient uses the actual float32 step.
 */
import assert from "node:assert/strict";

/** A small deterministic generator (mulberry32) in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n uniform values in [−scale, scale). */
export function randomArray(next: () => number, n: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (next() * 2 - 1) * scale;
  return out;
}

/**
 * Checks `backward(c)` (one gradient per input, same order) against finite differences of `forward`.
 * `tolerance` is relative to the largest analytic gradient (at least 1).
 */
export function gradcheck(
  label: string,
  seed: number,
  inputs: Float32Array[],
  forward: (inputs: Float32Array[]) => Float32Array[],
  backward: (dys: Float32Array[]) => Float32Array[],
  h = 1e-2,
  tolerance = 2e-3,
): void {
  const next = rng(seed ^ 0x5bd1e995);
  const outs = forward(inputs);
  const cs = outs.map((o) => randomArray(next, o.length));
  const loss = (): number => {
    let total = 0;
    forward(inputs).forEach((o, k) => o.forEach((v, i) => total += v * cs[k]![i]!));
    return total;
  };
  const grads = backward(cs);
  assert.equal(grads.length, inputs.length, `${label}: one gradient per input`);
  inputs.forEach((x, k) => {
    const g = grads[k]!;
    assert.equal(g.length, x.length, `${label}: gradient ${k} has the input's length`);
    const scale = Math.max(1, ...Array.from(g, Math.abs));
    for (let i = 0; i < x.length; i++) {
      const keep = x[i]!;
      x[i] = keep + h;
      const up = x[i]!;
      const lp = loss();
      x[i] = keep - h;
      const down = x[i]!;
      const lm = loss();
      x[i] = keep;
      const fd = (lp - lm) / (up - down);
      assert.ok(
        Math.abs(fd - g[i]!) <= tolerance * scale,
        `${label} (seed ${seed}): input ${k} element ${i}: analytic ${g[i]} vs finite difference ${fd}`,
      );
    }
  });
}

/** The protocol code of what `fn` throws ("no error" if it returns). */
export function errorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e && typeof e === "object" && "code" in e) return String((e as { code: unknown }).code);
    throw e;
  }
  return "no error";
}
