/** Shared helpers for the matmul tests: a seeded PRNG, value generators and a bit-exact comparison. */

import assert from "node:assert/strict";
import { type MatmulLayout, matmulReference } from "../../kernels/matmul.ts";
import { kernelThreads, setKernelThreads } from "../../kernels/threads.ts";
import {
  wasmMatmul,
  wasmMatmulThreadsDisabled,
  wasmMatmulThreadsReady,
} from "../../kernels/wasm/matmul_wasm.ts";

/** All four layouts. */
export const LAYOUTS: readonly MatmulLayout[] = ["nn", "nt", "tn", "tt"];

/** mulberry32: a small deterministic integer PRNG; returns uint32 values. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** n float32 values uniform in [-1, 1) with 24 random bits. */
export function uniform(next: () => number, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = ((next() >>> 8) - 8388608) / 8388608;
  return out;
}

const F = new Float32Array(1);
const U = new Uint32Array(F.buffer);
function fromBits(bits: number): number {
  U[0] = bits >>> 0;
  return F[0]!;
}

/**
 * n float32 values that stress rounding: ±0, subnormals, the smallest normals, huge values (products overflow
 * to ±Infinity now and then), powers of two around 2^24 (absorption), exact negatives of earlier values (cancellation)
 * and random mantissas with exponents from 2^-60 to 2^60.
 */
export function adversarial(next: () => number, n: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = next(), sign = (r & 1) === 1 ? -1 : 1;
    switch ((r >>> 1) % 9) {
      case 0:
        out[i] = sign * 0;
        break;
      case 1:
        out[i] = sign * fromBits(1 + (next() % 0x7fffff)); // subnormal
        break;
      case 2:
        out[i] = sign * fromBits(0x00800000 + (next() % 0x100)); // just above the smallest normal
        break;
      case 3:
        // huge: 2^40..2^55 (products stay finite); one in 64 is near FLT_MAX, so some products overflow
        out[i] = sign *
          (next() % 64 === 0
            ? fromBits(0x7e800000 + (next() % 0x00ffffff))
            : fromBits(0x53800000 + (next() % 0x07800000)));
        break;
      case 4:
        out[i] = sign * 2 ** (20 + (next() % 8)); // around 2^24: adding 1 is absorbed
        break;
      case 5:
        out[i] = i > 0 ? -out[next() % i]! : 1; // cancels an earlier value
        break;
      case 6:
        out[i] = sign;
        break;
      default: // any mantissa, exponent 2^-60..2^60
        out[i] = sign * fromBits(((67 + (next() % 121)) << 23) | (next() & 0x7fffff));
    }
  }
  return out;
}

/** Index of the first element whose bits differ (any NaN equals any NaN: its sign is not defined), or -1. */
export function firstBitDifference(x: Float32Array, y: Float32Array): number {
  if (x.length !== y.length) return Math.min(x.length, y.length);
  const ux = new Uint32Array(x.buffer, x.byteOffset, x.length);
  const uy = new Uint32Array(y.buffer, y.byteOffset, y.length);
  for (let i = 0; i < ux.length; i++) {
    if (ux[i] !== uy[i] && !(Number.isNaN(x[i]) && Number.isNaN(y[i]))) return i;
  }
  return -1;
}

/** Describes element i of two results for a failure message. */
export function describeDifference(x: Float32Array, y: Float32Array, i: number): string {
  const hex = (v: number) =>
    (new Uint32Array(new Float32Array([v]).buffer)[0]! >>> 0).toString(16).padStart(8, "0");
  return `index ${i}: ${x[i]} (0x${hex(x[i]!)}) vs ${y[i]} (0x${hex(y[i]!)})`;
}

/** The seeds a randomised test runs: NEURO_SEED if set, else the fixed list. */
export function seeds(fixed: number[]): number[] {
  const env = Deno.env.get("NEURO_SEED");
  return env === undefined ? fixed : [Number(env)];
}

/**
 * Asserts that the WebAssembly matmul of `a` [M×K] and `b` [K×N] on 1, 2 and 3 threads gives the reference
 * loops' bits in every layout; a mismatch names `label`, the layout, the shape, the thread count and the first
 * differing element.
 */
export function assertThreadsMatchReference(
  label: string,
  a: Float32Array,
  b: Float32Array,
  M: number,
  K: number,
  N: number,
): void {
  for (const layout of LAYOUTS) {
    const want = new Float32Array(M * N).fill(7);
    matmulReference(a, b, want, M, K, N, layout);
    for (const threads of [1, 2, 3]) {
      const got = new Float32Array(M * N).fill(-9);
      wasmMatmul(a, b, got, M, K, N, layout, threads);
      const i = firstBitDifference(got, want);
      assert.equal(
        i,
        -1,
        `${label} ${layout} ${M}x${K}x${N} on ${threads} threads: ${describeDifference(got, want, i)}`,
      );
    }
  }
}

/** How long the kernel workers may take to start: seconds when the whole suite runs on two loaded cores. */
export const STARTUP_MS = 120_000;

/** Waits for 3 kernel threads, runs `run` at 1, 2 and 3 threads, then restores the thread count. */
export async function withThreads(run: (threads: number) => void): Promise<void> {
  assert.equal(await wasmMatmulThreadsReady(3, STARTUP_MS), 3, `threads off: ${wasmMatmulThreadsDisabled()}`);
  const before = kernelThreads();
  try {
    for (const threads of [1, 2, 3]) {
      setKernelThreads(threads);
      run(threads);
    }
  } finally {
    setKernelThreads(before);
  }
}
