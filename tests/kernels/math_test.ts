import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { cos64, cosf, exp64, expf, log64, logf, pow64, rsqrtf, sin64, sinf } from "../../kernels/math.ts";

/** A small deterministic generator (mulberry32) for test inputs; the seed is printed on failure. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Distance in float32 ulps between two float32 values of the same sign. */
function ulps32(a: number, b: number): number {
  const f = new Float32Array([a, b]);
  const i = new Int32Array(f.buffer);
  return Math.abs(i[0]! - i[1]!);
}

Deno.test("math exp64 agrees with Math.exp to 1e-15 relative and expf within 1 float32 ulp", () => {
  const seed = 11;
  const next = rng(seed);
  let worst = 0;
  for (let i = 0; i < 20000; i++) {
    const x = (next() * 2 - 1) * (i % 2 ? 700 : 20);
    const rel = Math.abs(exp64(x) - Math.exp(x)) / Math.exp(x);
    worst = Math.max(worst, rel);
    if (Math.abs(x) < 87) assert.ok(ulps32(expf(x), Math.fround(Math.exp(x))) <= 1, `seed ${seed} x ${x}`);
  }
  assert.ok(worst < 1e-15, `seed ${seed} worst relative error ${worst}`);
});

Deno.test("math exp64 handles exact points, overflow, underflow and subnormal results", () => {
  assert.equal(exp64(0), 1);
  assert.equal(exp64(800), Infinity);
  assert.equal(exp64(-800), 0);
  assert.ok(Number.isNaN(exp64(NaN)));
  assert.equal(expf(-Infinity), 0);
  const sub = exp64(-740);
  assert.ok(sub > 0 && Math.abs(sub - Math.exp(-740)) / Math.exp(-740) < 1e-3);
  assert.ok(Math.abs(exp64(709.7) - Math.exp(709.7)) / Math.exp(709.7) < 1e-15);
  assert.equal(expf(1), Math.fround(Math.E));
});

Deno.test("math log64 agrees with Math.log to 1e-15 relative over many magnitudes", () => {
  const seed = 12;
  const next = rng(seed);
  let worst = 0;
  for (let i = 0; i < 20000; i++) {
    const x = exp64((next() * 2 - 1) * 700);
    const want = Math.log(x);
    const err = Math.abs(log64(x) - want) / Math.max(Math.abs(want), 1);
    worst = Math.max(worst, err);
    assert.ok(ulps32(logf(x), Math.fround(want)) <= 1, `seed ${seed} x ${x}`);
  }
  for (let i = 0; i < 5000; i++) {
    const x = 0.5 + next(); // near 1, where relative accuracy matters most
    const want = Math.log(x);
    worst = Math.max(worst, Math.abs(log64(x) - want) / Math.max(Math.abs(want), 1e-300));
  }
  assert.ok(worst < 1e-15, `seed ${seed} worst error ${worst}`);
});

Deno.test("math log64 handles 1, 2, zero, negatives, infinity and subnormals", () => {
  assert.equal(log64(1), 0);
  assert.equal(log64(2), Math.LN2);
  assert.equal(log64(0), -Infinity);
  assert.ok(Number.isNaN(log64(-1)));
  assert.equal(log64(Infinity), Infinity);
  assert.ok(Math.abs(log64(5e-324) - Math.log(5e-324)) < 1e-12);
  assert.ok(Math.abs(log64(1e-310) - Math.log(1e-310)) < 1e-12);
});

Deno.test("math sin64 and cos64 agree with Math.sin and Math.cos to 1e-15 times max(1,|x|)", () => {
  const seed = 13;
  const next = rng(seed);
  let worst = 0;
  for (let i = 0; i < 20000; i++) {
    const x = (next() * 2 - 1) * (i % 3 === 0 ? 10000 : i % 3 === 1 ? 10 : 1);
    const scale = Math.max(1, Math.abs(x));
    worst = Math.max(
      worst,
      Math.abs(sin64(x) - Math.sin(x)) / scale,
      Math.abs(cos64(x) - Math.cos(x)) / scale,
    );
    if (Math.abs(x) < 100) {
      assert.ok(Math.abs(sinf(x) - Math.fround(Math.sin(x))) <= 6e-8, `seed ${seed} x ${x}`);
      assert.ok(Math.abs(cosf(x) - Math.fround(Math.cos(x))) <= 6e-8, `seed ${seed} x ${x}`);
    }
  }
  assert.ok(worst < 1e-15, `seed ${seed} worst error ${worst}`);
  assert.equal(sin64(0), 0);
  assert.equal(cos64(0), 1);
});

Deno.test("math trigonometry refuses arguments beyond 1.6e6 with invalid_tensor", () => {
  for (const x of [2e6, -2e6, Infinity, NaN]) {
    assert.throws(() => sin64(x), (e) => e instanceof ProtocolError && e.code === "invalid_tensor");
    assert.throws(() => cos64(x), (e) => e instanceof ProtocolError && e.code === "invalid_tensor");
  }
});

Deno.test("math pow64 gives rotary frequencies and rsqrtf the float32 reciprocal square root", () => {
  for (const [base, y] of [[100000, -2 / 64], [10000, -0.5], [2, 10]] as const) {
    const want = Math.pow(base, y);
    assert.ok(Math.abs(pow64(base, y) - want) / want < 1e-14);
  }
  assert.equal(rsqrtf(4), 0.5);
  assert.equal(rsqrtf(2), Math.fround(1 / Math.sqrt(2)));
});

Deno.test("math source never calls the engine's transcendental functions", async () => {
  const source = await Deno.readTextFile(new URL("../../kernels/math.ts", import.meta.url));
  const code = source.replace(/\/\*\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  for (const name of ["exp", "log", "sin", "cos", "pow", "tan", "atan", "expm1", "log1p", "hypot"]) {
    assert.ok(!code.includes(`Math.${name}(`), `Math.${name} is used`);
  }
});
