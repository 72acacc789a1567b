/**
 * Matrix multiplication, the kernel every linear layer, attention score and gradient goes through.
 *
 * THE DEFINITION (part of consensus): for every output element
 *
 * ```
 * C[i,j] = Σ_{k=0}^{K-1} A[i,k]·B[k,j]      acc = +0; for k = 0, 1, …, K-1 (strictly ascending):
 *                                            acc = fround(acc + fround(A[i,k] * B[k,j]))
 * ```
 *
 * in float32 with a rounding after every multiply and after every add (never a fused multiply-add), and the
 * accumulator starting at +0 (so a sum of −0 products is +0, and K = 0 gives +0). `matmulReference` is this
 * definition written as plain loops; the WebAssembly SIMD path (`kernels/wasm/`) is proven bit-identical to
 * it by `tests/kernels/wasm_test.ts` and is used by `matmul` when available and the shape is large enough.
 * Setting the environment variable `NEURO_KERNELS=reference` forces the reference path everywhere. On more
 * than one kernel thread (`NEURO_THREADS`, `kernels/threads.ts`) the WebAssembly path splits the output
 * columns across threads; each element's sum is still the one above, so the thread count never changes a bit.
 *
 * Shapes: A is M×K, B is K×N, C is M×N, all row-major `Float32Array`s. `layout` says how A and B are stored:
 * its first letter is A's ("n": stored [M,K]; "t": stored [K,M], i.e. transposed), the second is B's
 * ("n": stored [K,N]; "t": stored [N,K]). `y = x·Wᵀ` with W stored [N,K] (a linear layer) is "nt"; the
 * weight gradient `dW = dyᵀ·x` with dy stored [M,N] and x stored [M,K] is "tn".
 *
 * Buffers may be longer than needed (only the first M·K, K·N, M·N elements are used) but `out` must not
 * overlap `a` or `b`.
 *
 * A sum may be taken in pieces: `matmulContinue` runs the same loop with `acc` starting from the value `out`
 * holds instead of +0, so a product over K = K1 + K2 is `matmul` over A's first K1 columns and B's first K1
 * rows, then `matmulContinue` over the rest, with every element's operations and order those of one `matmul`
 * (the head's vocabulary is walked so, in slices, to keep the kernels' memory small).
 *
 * @example
 * ```ts
 * import { matmul } from "./matmul.ts";
 * const x = new Float32Array([1, 2, 3, 4, 5, 6]); // x: [2,3]
 * const w = new Float32Array([1, 0, 0, 0, 1, 0]); // w: [2,3] (out features × in features)
 * const y = new Float32Array(4); // y: [2,2]
 * matmul(x, w, y, 2, 3, 2, "nt"); // y = x·wᵀ = [1, 2, 4, 5]
 * ```
 * @module
 */

import { ProtocolError } from "../core/errors.ts";
import { allFinite } from "./tensor.ts";
import { kernelThreads } from "./threads.ts";
import { wasmMatmul, wasmMatmulAvailable, wasmMatmulFits } from "./wasm/matmul_wasm.ts";
import { wasmMatmulGroup } from "./wasm/matmul_group_wasm.ts";

/** How A and B are stored: first letter A ("n" [M,K] / "t" [K,M]), second letter B ("n" [K,N] / "t" [N,K]). */
export type MatmulLayout = "nn" | "nt" | "tn" | "tt";

/** Below this many multiply-adds (M·K·N) `matmul` stays on the reference path (copy overhead dominates). */
export const WASM_MIN_WORK = 4096;

/** True when the environment forces the reference path (`NEURO_KERNELS=reference`). Read once. */
export const FORCE_REFERENCE: boolean = readForceReference();

function readForceReference(): boolean {
  try {
    return Deno.env.get("NEURO_KERNELS") === "reference";
  } catch {
    return false; // no --allow-env: the default (fast path when available) applies
  }
}

/**
 * C = A·B per the module definition, on the fastest path that is bit-identical to `matmulReference`:
 * WebAssembly SIMD when it is available, the shape is at least `WASM_MIN_WORK` (and fits 4 GiB of wasm
 * memory) and `NEURO_KERNELS` is not "reference"; otherwise the reference loops.
 * Throws `ProtocolError("invalid_tensor")` on bad sizes, a bad layout or `out` overlapping an input.
 */
export function matmul(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout = "nn",
): void {
  run(a, b, out, M, K, N, layout, false);
}

/**
 * `matmul`, then true when every output element is finite (false: some is NaN or infinite; the output is
 * written either way). On the WebAssembly path the check runs as the output is copied out, on every thread,
 * instead of a separate `assertFinite` pass on the calling thread.
 */
export function matmulFinite(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout = "nn",
): boolean {
  return run(a, b, out, M, K, N, layout, true);
}

/**
 * C = C + A·B as a continuation of C's sums: for every element, acc = out[i,j] (the value it holds), then for
 * k = 0, 1, …, K−1, acc = fround(acc + fround(A[i,k] * B[k,j])), written back. Matmul over the first K1 steps
 * and this over the next K2 give the bits of one matmul over K1 + K2. With `check`, returns false when some
 * output element is NaN or infinite (always true without it). Throws as `matmul` does.
 */
export function matmulContinue(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout = "nn",
  check = false,
): boolean {
  return run(a, b, out, M, K, N, layout, check, true);
}

/**
 * `matmulFinite(a, bs[g], outs[g], M, K, Ns[g], "nt")` for every g — the linear layers of one input (q, k
 * and v; gate and up) — with the same bits and results. On the WebAssembly path, for weights made resident
 * with their panels packed together, it is one call (`wasmMatmulGroup`): A copied in and packed once, and
 * one pool call for the columns of every B.
 */
export function matmulGroupFinite(
  a: Float32Array,
  bs: readonly Float32Array[],
  outs: readonly Float32Array[],
  M: number,
  K: number,
  Ns: readonly number[],
): boolean[] {
  if (outs.length !== bs.length || Ns.length !== bs.length) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot multiply a group of matrices: ${bs.length} B, ${outs.length} outputs and ${Ns.length} widths`,
    );
  }
  bs.forEach((b, g) => validateMatmul(a, b, outs[g]!, M, K, Ns[g]!, "nt"));
  const wide = Ns.reduce((s, N) => s + N, 0);
  if (
    !FORCE_REFERENCE && Ns.every((N) => M * K * N >= WASM_MIN_WORK) && wasmMatmulAvailable() &&
    wasmMatmulFits(M, K, wide)
  ) {
    try {
      const views = outs.map((out, g) => out.subarray(0, M * Ns[g]!));
      return wasmMatmulGroup(a, bs, views, M, K, Ns, kernelThreads(), true);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e; // the wasm memory could not grow: one by one, the same bits
    }
  }
  return bs.map((b, g) => run(a, b, outs[g]!, M, K, Ns[g]!, "nt", true));
}

function run(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout,
  check: boolean,
  continued = false,
): boolean {
  validateMatmul(a, b, out, M, K, N, layout);
  if (!FORCE_REFERENCE && M * K * N >= WASM_MIN_WORK && wasmMatmulAvailable() && wasmMatmulFits(M, K, N)) {
    try {
      return wasmMatmul(a, b, out.subarray(0, M * N), M, K, N, layout, kernelThreads(), check, continued);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e; // the wasm memory could not grow: same bits from the loops
    }
  }
  referenceLoops(a, b, out, M, K, N, layout, continued);
  return !check || allFinite(out, 0, M * N);
}

/** C = A·B by the plain TypeScript loops that are the definition (never the WebAssembly path). */
export function matmulReference(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout = "nn",
): void {
  validateMatmul(a, b, out, M, K, N, layout);
  referenceLoops(a, b, out, M, K, N, layout);
}

/** Checks dimensions, layout, buffer lengths and aliasing; throws `ProtocolError("invalid_tensor")`. */
export function validateMatmul(
  a: Float32Array,
  b: Float32Array,
  out: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: string,
): void {
  for (const [name, v] of [["M", M], ["K", K], ["N", N]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot multiply matrices: ${name} is ${v}, expected an integer >= 0`,
      );
    }
  }
  if (layout !== "nn" && layout !== "nt" && layout !== "tn" && layout !== "tt") {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot multiply matrices: layout is ${JSON.stringify(layout)}`,
    );
  }
  const sizes = [["a", a, M * K], ["b", b, K * N], ["out", out, M * N]] as const;
  for (const [name, buf, need] of sizes) {
    if (!(buf instanceof Float32Array)) {
      throw new ProtocolError("invalid_tensor", `Cannot multiply matrices: ${name} is not a Float32Array`);
    }
    if (buf.length < need) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot multiply matrices: ${name} has ${buf.length} elements, expected at least ${need} (M=${M} K=${K} N=${N})`,
      );
    }
  }
  if (M * N > 0 && (overlaps(out, M * N, a, M * K) || overlaps(out, M * N, b, K * N))) {
    throw new ProtocolError("invalid_tensor", "Cannot multiply matrices: out overlaps an input");
  }
}

function overlaps(x: Float32Array, xn: number, y: Float32Array, yn: number): boolean {
  if (x.buffer !== y.buffer || xn === 0 || yn === 0) return false;
  const x0 = x.byteOffset, x1 = x0 + 4 * xn, y0 = y.byteOffset, y1 = y0 + 4 * yn;
  return x0 < y1 && y0 < x1;
}

/**
 * The reference loops. Each output element sees exactly the definition's operations in k order; for the
 * "n" B layouts the row of C is the accumulator (a store into a Float32Array rounds the float64 sum of two
 * float32 values to float32, which is the float32 sum), so B is read along rows.
 */
function referenceLoops(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  M: number,
  K: number,
  N: number,
  layout: MatmulLayout,
  continued = false,
): void {
  const fr = Math.fround;
  const aT = layout[0] === "t", bT = layout[1] === "t";
  if (!bT) {
    for (let i = 0; i < M; i++) {
      const row = i * N;
      if (!continued) c.fill(0, row, row + N); // acc = +0 (or, continued, the value C holds)
      for (let k = 0; k < K; k++) {
        const aik = aT ? a[k * M + i]! : a[i * K + k]!;
        const bk = k * N;
        for (let j = 0; j < N; j++) c[row + j] = c[row + j]! + fr(aik * b[bk + j]!);
      }
    }
    return;
  }
  // B stored [N,K]: dot products along rows of B, four output columns at a time (four independent sums,
  // each still k ascending from +0), then the remaining columns one by one.
  const at = (i: number, k: number) => (aT ? a[k * M + i]! : a[i * K + k]!);
  for (let i = 0; i < M; i++) {
    let j = 0;
    for (; j + 4 <= N; j += 4) {
      const b0 = j * K, b1 = b0 + K, b2 = b1 + K, b3 = b2 + K;
      const o = i * N + j;
      let s0 = continued ? c[o]! : 0, s1 = continued ? c[o + 1]! : 0;
      let s2 = continued ? c[o + 2]! : 0, s3 = continued ? c[o + 3]! : 0;
      for (let k = 0; k < K; k++) {
        const x = at(i, k);
        s0 = fr(s0 + fr(x * b[b0 + k]!));
        s1 = fr(s1 + fr(x * b[b1 + k]!));
        s2 = fr(s2 + fr(x * b[b2 + k]!));
        s3 = fr(s3 + fr(x * b[b3 + k]!));
      }
      c[i * N + j] = s0;
      c[i * N + j + 1] = s1;
      c[i * N + j + 2] = s2;
      c[i * N + j + 3] = s3;
    }
    for (; j < N; j++) {
      const bj = j * K;
      let acc = continued ? c[i * N + j]! : 0;
      for (let k = 0; k < K; k++) acc = fr(acc + fr(at(i, k) * b[bj + k]!));
      c[i * N + j] = acc;
    }
  }
}
