/**
 * Callers of the deterministic softmax kernels (`softmax.wat`), bit-identical to the TypeScript reference:
 * attention split by (batch row, head) across the kernel threads, and the head's cross-entropy split by
 * vocabulary ranges. Each call copies its inputs into the kernels' shared memory after the resident region,
 * writes a block of i32 parameters, runs one job per range on this thread and the pool's workers
 * (`pool.ts`), and copies the outputs out. Which thread computes which heads or which vocabulary range never
 * changes a bit: every output element is computed whole, with the reference's reduction order; the only
 * sums that cross units (a key/value group's heads, a row's exponentials) are added here, on this thread, in
 * the reference's order. Callers normally use `attentionForward`/`attentionBackward` (`kernels/attention.ts`)
 * and the cross-entropy functions (`kernels/cross_entropy.ts`), which validate first and fall back to the
 * reference when this returns null (no WebAssembly, or a call too large for 4 GiB).
 * @module
 */

import type { AttentionDims } from "../attention.ts";
import { kernelThreads } from "../threads.ts";
import {
  ATTENTION_BACKWARD_KERNEL,
  ATTENTION_FORWARD_KERNEL,
  ensureBytes,
  isResident,
  type KernelMemory,
  kernelMemory,
  MAX_BYTES,
  scratchBase,
  SILU_BACKWARD_KERNEL,
  SILU_KERNEL,
  VOCAB_EXP_KERNEL,
  VOCAB_GRADIENT_KERNEL,
} from "./kernel_memory.ts";

/**
 * Below this much work (multiply-adds or exponentials) a call stays on one thread: the matmul's threshold.
 * Handing a few milliseconds of work to a worker costs more than it saves on a busy machine (a worker may be
 * starting, or descheduled), which small models (the devnet's) would otherwise do on every call.
 */
export const SOFTMAX_THREAD_MIN_WORK = 1 << 18;

const fr = Math.fround;
const al = (n: number) => Math.ceil(n / 4) * 16; // n floats, rounded up to 16 bytes
const PARAMS = 64; // bytes of the i32 parameter block

/**
 * `units` split into at most `threads` ascending ranges [lo, hi), as even as possible; one when the work is
 * below `min`.
 */
export function unitSplit(
  units: number,
  work: number,
  threads: number,
  min = SOFTMAX_THREAD_MIN_WORK,
): [number, number][] {
  if (threads <= 1 || units < 2 || work < min) return [[0, units]];
  const parts = Math.min(threads, units);
  const out: [number, number][] = [];
  for (let p = 0, lo = 0; p < parts; p++) {
    const take = Math.floor(units / parts) + (p < units % parts ? 1 : 0);
    out.push([lo, lo + take]);
    lo += take;
  }
  return out;
}

/** Byte offsets handed out one after another from the scratch base, each 16-byte aligned. */
class Arena {
  end: number = scratchBase();
  floats(n: number): number {
    const at = this.end;
    this.end += al(n);
    return at;
  }
}

/**
 * Runs softmax.wat's `kernel` (a pool kernel index) with the parameter block at `params` on each range (job
 * part p gets its own scratch) across this thread and the workers.
 */
export function runSoftmaxJobs(
  km: KernelMemory,
  kernel: number,
  params: number,
  ranges: readonly (readonly [number, number])[],
): void {
  const fn = kernel === SILU_KERNEL
    ? km.softmax.silu
    : kernel === SILU_BACKWARD_KERNEL
    ? km.softmax.silu_backward
    : [
      km.softmax.attention_forward,
      km.softmax.attention_backward,
      km.softmax.vocab_exp,
      km.softmax.vocab_gradient,
    ][kernel - ATTENTION_FORWARD_KERNEL]!;
  const jobs = ranges.map(([lo, hi], part) => [kernel, params, part, lo, hi]);
  const local = (job: readonly number[]) => fn(job[1]!, job[2]!, job[3]!, job[4]!);
  if (jobs.length === 1) local(jobs[0]!);
  else km.pool.run(jobs, local);
}

/** Grows the memory for an arena that ends at `end`; false when it cannot fit 4 GiB. */
function fits(km: KernelMemory, end: number): boolean {
  if (end > MAX_BYTES) return false;
  ensureBytes(km, end); // throws RangeError when refused
  return true;
}

/**
 * Attention forward on the kernels: out [B·Tq, H·D] and the probabilities [B, H, Tq, Tk], the bits of
 * `attentionForwardReference`; null when the kernels are unavailable, the call does not fit or a value is
 * not finite (then the reference gives its own error). Throws RangeError when the memory cannot grow.
 * Resident keys and values (a `KvCache` in the kernels' memory) are read where they are. Without
 * `probabilities` (decoding, which keeps none), p is not copied out: it is null when every probability is
 * finite, and copied out only when one is not, for the caller's error.
 */
export function wasmAttentionForward(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  dims: AttentionDims,
  threads: number = kernelThreads(),
  probabilities = true,
): { out: Float32Array; p: Float32Array | null } | null {
  const km = kernelMemory();
  if (km === null) return null;
  const { B, Tq, Tk, H, KVH, D } = dims;
  const ranges = unitSplit(B * H, B * H * Tq * Tk * D, threads);
  const a = new Arena();
  const at = a.floats(PARAMS / 4);
  const nq = B * Tq * H * D, nk = B * Tk * KVH * D, np = B * H * Tq * Tk;
  const inPlace = (x: Float32Array) => isResident(x) && x.length >= nk;
  const q0 = a.floats(nq);
  const k0 = inPlace(k) ? k.byteOffset : a.floats(nk), v0 = inPlace(v) ? v.byteOffset : a.floats(nk);
  const [out0, p0] = [a.floats(nq), a.floats(np)];
  const per = al(D * Tk); // kT: [D, Tk] per job
  const scratch = a.floats(0);
  if (!fits(km, scratch + ranges.length * per)) return null;
  const buf = km.memory.buffer;
  new Float32Array(buf, q0, nq).set(q.subarray(0, nq));
  if (!inPlace(k)) new Float32Array(buf, k0, nk).set(k.subarray(0, nk));
  if (!inPlace(v)) new Float32Array(buf, v0, nk).set(v.subarray(0, nk));
  // The kernel sums each query's values only up to its last unmasked key: the reference's bits when every
  // value is finite (a masked +0·v is ±0 then). A value that is not finite is left to the reference, whose
  // masked +0·Infinity is NaN, so that its error is the one given.
  if (km.matmul.all_finite(v0, nk) !== 1) return null;
  new Int32Array(buf, at, 12).set([q0, k0, v0, out0, p0, scratch, Tq, Tk, H, KVH, D, per]);
  runSoftmaxJobs(km, ATTENTION_FORWARD_KERNEL, at, ranges);
  const keep = probabilities || km.matmul.all_finite(p0, np) !== 1;
  return {
    out: new Float32Array(buf, out0, nq).slice(),
    p: keep ? new Float32Array(buf, p0, np).slice() : null,
  };
}

/**
 * Attention backward on the kernels (Tq = Tk = T): dq [B·T, H·D], dk and dv [B·T, KVH·D], the bits of
 * `attentionBackwardReference`. Each head's parts of dk and dv are computed apart and added here, per group
 * in ascending head order, as the reference adds them. Null when unavailable or too large.
 */
export function wasmAttentionBackward(
  dOut: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  p: Float32Array,
  dims: AttentionDims,
  threads: number = kernelThreads(),
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } | null {
  const km = kernelMemory();
  if (km === null) return null;
  const { B, Tq: T, H, KVH, D } = dims;
  const ranges = unitSplit(B * H, 4 * B * H * T * T * D, threads);
  const a = new Arena();
  const at = a.floats(PARAMS / 4);
  const nq = B * T * H * D, nk = B * T * KVH * D, np = B * H * T * T, nparts = B * H * T * D;
  const [do0, q0, k0, v0, p0, dq0] = [nq, nq, nk, nk, np, nq].map((n) => a.floats(n)) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const dkp0 = a.floats(nparts), dvp0 = a.floats(nparts);
  const per = al(D * T + 3 * T * T); // vT [D, T], ds, dsT and pT [T, T] per job
  const scratch = a.floats(0);
  if (!fits(km, scratch + ranges.length * per)) return null;
  const buf = km.memory.buffer;
  new Float32Array(buf, do0, nq).set(dOut.subarray(0, nq));
  new Float32Array(buf, q0, nq).set(q.subarray(0, nq));
  new Float32Array(buf, k0, nk).set(k.subarray(0, nk));
  new Float32Array(buf, v0, nk).set(v.subarray(0, nk));
  new Float32Array(buf, p0, np).set(p.subarray(0, np));
  new Int32Array(buf, at, 14).set([do0, q0, k0, v0, p0, dq0, dkp0, dvp0, scratch, T, H, KVH, D, per]);
  runSoftmaxJobs(km, ATTENTION_BACKWARD_KERNEL, at, ranges);
  const dq = new Float32Array(buf, dq0, nq).slice(); // dq: [B·T, H·D]
  const dk = new Float32Array(nk); // dk: [B·T, KVH·D]
  const dv = new Float32Array(nk); // dv: [B·T, KVH·D]
  const dkp = new Float32Array(buf, dkp0, nparts), dvp = new Float32Array(buf, dvp0, nparts); // [B, H, T, D]
  const rep = H / KVH, W = KVH * D;
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      const g = Math.floor(h / rep);
      for (let t = 0; t < T; t++) {
        const src = ((b * H + h) * T + t) * D, dst = (b * T + t) * W + g * D;
        for (let d = 0; d < D; d++) {
          dk[dst + d] = fr(dk[dst + d]! + dkp[src + d]!);
          dv[dst + d] = fr(dv[dst + d]! + dvp[src + d]!);
        }
      }
    }
  }
  return { dq, dk, dv };
}

/** What the head's cross-entropy needs of each row: its maximum, its exponential sum and the gradient. */
export interface VocabRows {
  readonly m: Float32Array; // m: [N]
  readonly sums: Float32Array; // sums: [N], +0 for an ignored row
  readonly dz: Float32Array | null; // dz: [N,V] when asked for
}

/**
 * The head's softmax rows on the kernels, split by vocabulary ranges: each labelled row's maximum `m`, its
 * exponential sum `Z` (added here, on this thread, in ascending vocabulary order as the reference does) and,
 * when `gradient`, the logit gradient dz [N,V] (`labelled` rows in the mean). Labels of −100 are ignored rows.
 * Null when unavailable or too large; throws RangeError when the memory cannot grow.
 */
export function wasmVocabRows(
  logits: Float32Array,
  labels: Int32Array,
  N: number,
  V: number,
  labelled: number,
  gradient: boolean,
  threads: number = kernelThreads(),
): VocabRows | null {
  const km = kernelMemory();
  if (km === null) return null;
  const n = N * V;
  const ranges = unitSplit(n, n, threads);
  const a = new Arena();
  const at = a.floats(PARAMS / 4);
  const z0 = a.floats(n), e0 = a.floats(n), m0 = a.floats(N), s0 = a.floats(N), y0 = a.floats(N);
  if (!fits(km, a.end)) return null;
  const buf = km.memory.buffer;
  new Float32Array(buf, z0, n).set(logits.subarray(0, n));
  const m = new Float32Array(N); // m: [N]
  for (let r = 0; r < N; r++) {
    const o = r * V;
    let best = logits[o]!;
    for (let j = 1; j < V; j++) if (logits[o + j]! > best) best = logits[o + j]!;
    m[r] = best;
  }
  new Float32Array(buf, m0, N).set(m);
  new Int32Array(buf, at, 4).set([z0, e0, m0, V]);
  runSoftmaxJobs(km, VOCAB_EXP_KERNEL, at, ranges);
  const e = new Float32Array(buf, e0, n);
  const sums = new Float32Array(N); // sums: [N]
  for (let r = 0; r < N; r++) {
    if (labels[r] === -100) continue;
    let sum = 0;
    for (let j = r * V; j < (r + 1) * V; j++) sum = fr(sum + e[j]!);
    sums[r] = sum;
  }
  if (!gradient) return { m, sums, dz: null };
  new Float32Array(buf, s0, N).set(sums);
  new Int32Array(buf, y0, N).set(Array.from(labels.subarray(0, N), (y) => (y === -100 ? -1 : y)));
  new Int32Array(buf, at, 6).set([e0, e0, s0, y0, V, labelled]); // dz overwrites e
  runSoftmaxJobs(km, VOCAB_GRADIENT_KERNEL, at, ranges);
  return { m, sums, dz: new Float32Array(buf, e0, n).slice() };
}

/**
 * The MLP's gated product h = fround(fround(g·sigmoid(g))·u) elementwise (`silu` in `softmax.wat`, the
 * reference's float64 sigmoid through the same exp64), split by element ranges across the kernel threads:
 * each element is computed whole, so any split gives the same bits. Null when unavailable or too large;
 * throws RangeError when the memory cannot grow.
 */
export function wasmSilu(
  g: Float32Array,
  u: Float32Array,
  threads: number = kernelThreads(),
): Float32Array | null {
  return wasmSiluChecked(g, u, threads)?.h ?? null;
}

/**
 * `wasmSilu`, and whether every element of h is finite (one SIMD pass, `all_finite`, over h in the kernel
 * memory before it is copied out).
 */
export function wasmSiluChecked(
  g: Float32Array,
  u: Float32Array,
  threads: number = kernelThreads(),
): { h: Float32Array; finite: boolean } | null {
  const km = kernelMemory();
  if (km === null) return null;
  const n = g.length;
  // An exponential costs about as much as a few dozen multiply-adds: the threshold in those units.
  const ranges = unitSplit(n, 32 * n, threads);
  const a = new Arena();
  const at = a.floats(PARAMS / 4), g0 = a.floats(n), u0 = a.floats(n);
  if (!fits(km, a.end)) return null;
  const buf = km.memory.buffer;
  new Float32Array(buf, g0, n).set(g);
  new Float32Array(buf, u0, n).set(u.subarray(0, n));
  new Int32Array(buf, at, 3).set([g0, u0, g0]); // h overwrites g
  runSoftmaxJobs(km, SILU_KERNEL, at, ranges);
  const finite = km.matmul.all_finite(g0, n) === 1;
  return { h: new Float32Array(buf, g0, n).slice(), finite };
}

/**
 * The gated product's backward elementwise (`silu_backward` in `softmax.wat`, the reference's float64 steps):
 * from g, u and dh, du and dg, split by element ranges across the kernel threads (the same bits for any
 * split). Null when unavailable or too large; throws RangeError when the memory cannot grow.
 */
export function wasmSiluBackward(
  g: Float32Array,
  u: Float32Array,
  dh: Float32Array,
  threads: number = kernelThreads(),
): { du: Float32Array; dg: Float32Array } | null {
  const km = kernelMemory();
  if (km === null) return null;
  const n = g.length;
  const ranges = unitSplit(n, 32 * n, threads);
  const a = new Arena();
  const at = a.floats(PARAMS / 4), g0 = a.floats(n), u0 = a.floats(n), d0 = a.floats(n), e0 = a.floats(n);
  if (!fits(km, a.end)) return null;
  const buf = km.memory.buffer;
  new Float32Array(buf, g0, n).set(g);
  new Float32Array(buf, u0, n).set(u.subarray(0, n));
  new Float32Array(buf, d0, n).set(dh.subarray(0, n));
  new Int32Array(buf, at, 5).set([g0, u0, d0, d0, e0]); // du overwrites dh
  runSoftmaxJobs(km, SILU_BACKWARD_KERNEL, at, ranges);
  return { du: new Float32Array(buf, d0, n).slice(), dg: new Float32Array(buf, e0, n).slice() };
}
