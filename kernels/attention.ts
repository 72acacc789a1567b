/**
 * Causal grouped-query attention with softmax (after the rotary embedding has been applied to q and k).
 *
 * Query head h reads key/value head g = ⌊h / (H/KVH)⌋. For one batch row and head, with scale
 * `σ = fround(1/√D)` and query i at absolute position `Tk − Tq + i`, keys j ≤ that position:
 * `s_ij = fround(matmul(q_i, k_j) · σ)`; `m_i = max_j s_ij` (j ascending); `e_ij = expf(s_ij − m_i)`;
 * `z_i = Σ_j e_ij` (float32, j ascending); `p_ij = e_ij / z_i`, and `p_ij = +0` above the diagonal;
 * `out_i = matmul(p_i, V)`. A masked +0 probability adds nothing to a float32 sum that starts at +0, so the
 * output of a query is the same bits whether later keys exist (training) or not (generation with a cache).
 *
 * Backward (Tq = Tk = T): `dP = dO·Vᵀ`; `ρ_i = Σ_{j≤i} p_ij·dp_ij` (j ascending);
 * `ds_ij = fround(fround(p_ij·(dp_ij − ρ_i))·σ)` below or on the diagonal, +0 above; `dQ = dS·K`,
 * `dK_h = dSᵀ·Q`, `dV_h = Pᵀ·dO`; the heads of one group add into dK and dV in ascending head order.
 *
 * `attentionForwardReference` and `attentionBackwardReference` are this definition as plain loops (over the
 * matmul). `attentionForward` and `attentionBackward` run the WebAssembly softmax kernels
 * (`kernels/wasm/softmax.wat`) when available and `NEURO_KERNELS` is not "reference": the work is split by
 * (batch row, head) across the kernel threads (`NEURO_THREADS`), each unit computed with exactly the
 * definition's operations, and the group sums of dK and dV added on the calling thread in ascending head
 * order, so the bits are the reference's for any thread count (`tests/kernels/attention_threads_test.ts`).
 *
 * @example
 * ```ts
 * import { attentionForward } from "./attention.ts";
 * const q = new Float32Array(2 * 2), k = new Float32Array(2 * 2), v = new Float32Array([1, 2, 3, 4]);
 * const { out } = attentionForward(q, k, v, { B: 1, Tq: 2, Tk: 2, H: 1, KVH: 1, D: 2 }); // [1,2, 2,3]
 * ```
 */
import { ProtocolError } from "../core/errors.ts";
import { expf } from "./math.ts";
import { FORCE_REFERENCE, matmul } from "./matmul.ts";
import { wasmAttentionBackward, wasmAttentionForward } from "./wasm/softmax_wasm.ts";
import { assertFinite } from "./tensor.ts";

const fr = Math.fround;

/** Sizes of one attention call: B rows, Tq queries and Tk keys per row, H heads, KVH kv heads, D width. */
export interface AttentionDims {
  readonly B: number;
  readonly Tq: number;
  readonly Tk: number;
  readonly H: number;
  readonly KVH: number;
  readonly D: number;
}

/** The probabilities of every row and head, kept for the backward: [B, H, Tq, Tk]. */
export interface AttentionCache {
  readonly p: Float32Array;
}

/** Copies head `head` of rows b·T … b·T+T−1 of x [B·T, heads·D] into a contiguous [T, D]. */
function gather(x: Float32Array, b: number, T: number, heads: number, head: number, D: number): Float32Array {
  const out = new Float32Array(T * D); // out: [T,D]
  const W = heads * D;
  for (let t = 0; t < T; t++) {
    const o = (b * T + t) * W + head * D;
    out.set(x.subarray(o, o + D), t * D);
  }
  return out;
}

/** Adds a [T, D] block into head `head` of rows b·T … of x [B·T, heads·D], rounding each sum to float32. */
function scatterAdd(
  x: Float32Array,
  part: Float32Array,
  b: number,
  T: number,
  heads: number,
  head: number,
  D: number,
) {
  const W = heads * D;
  for (let t = 0; t < T; t++) {
    const o = (b * T + t) * W + head * D;
    for (let d = 0; d < D; d++) x[o + d] = fr(x[o + d]! + part[t * D + d]!);
  }
}

function checkDims(d: AttentionDims): void {
  if (d.H % d.KVH !== 0 || d.Tq > d.Tk || d.Tq < 1) {
    throw new ProtocolError("invalid_tensor", `Cannot attend: dims ${JSON.stringify(d)}`);
  }
}

function checkSizes(d: AttentionDims, arrays: readonly (readonly [string, Float32Array, number])[]): void {
  for (const [name, x, rows] of arrays) {
    const need = rows * (name === "k" || name === "v" || name === "dk" ? d.KVH : d.H) * d.D;
    if (x.length < need) {
      throw new ProtocolError(
        "invalid_tensor",
        `Cannot attend: ${name} has ${x.length} elements, expected at least ${need}`,
      );
    }
  }
}

/** Runs `fast` unless the reference is forced; a memory that cannot grow (RangeError) or null falls back. */
function fastOr<T>(fast: () => T | null, reference: () => T): T {
  if (!FORCE_REFERENCE) {
    try {
      const r = fast();
      if (r !== null) return r;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
    }
  }
  return reference();
}

/**
 * q [B·Tq, H·D], k and v [B·Tk, KVH·D] → out [B·Tq, H·D] and the probabilities, on the fastest path that
 * gives the reference's bits (see the module comment).
 */
export function attentionForward(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  dims: AttentionDims,
): { out: Float32Array; cache: AttentionCache } {
  const { out, p } = forward(q, k, v, dims, true);
  return { out, cache: { p: p! } };
}

/**
 * `attentionForward`'s output alone (the same bits and the same errors), for decoding, which keeps no
 * probabilities: the kernels check them where they are instead of copying them out.
 */
export function attentionOutput(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  dims: AttentionDims,
): Float32Array {
  return forward(q, k, v, dims, false).out;
}

/** Both: the output, and the probabilities when asked for (or found not finite, for the error). */
function forward(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  dims: AttentionDims,
  probabilities: boolean,
): { out: Float32Array; p: Float32Array | null } {
  checkDims(dims);
  checkSizes(dims, [["q", q, dims.B * dims.Tq], ["k", k, dims.B * dims.Tk], ["v", v, dims.B * dims.Tk]]);
  return fastOr(() => {
    const r = wasmAttentionForward(q, k, v, dims, undefined, probabilities);
    if (r !== null) checkOutputs(r.out, r.p, dims);
    return r;
  }, () => {
    const { out, cache } = attentionForwardReference(q, k, v, dims);
    return { out, p: cache.p };
  });
}

/**
 * The reference's checks of a fast call's results, in its order: each row and head's probabilities (p null:
 * the kernels found every one finite), then the output.
 */
function checkOutputs(out: Float32Array, p: Float32Array | null, dims: AttentionDims): void {
  const { B, H, Tq, Tk } = dims;
  for (let bh = 0; p !== null && bh < B * H; bh++) {
    assertFinite(p.subarray(bh * Tq * Tk, (bh + 1) * Tq * Tk), "attention probabilities");
  }
  assertFinite(out, "attention output");
}

/** dOut [B·T, H·D] → dq [B·T, H·D], dk and dv [B·T, KVH·D], on the fastest path with the reference's bits. */
export function attentionBackward(
  dOut: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: AttentionCache,
  dims: AttentionDims,
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  checkDims(dims);
  const { B, Tq: T, H } = dims;
  if (dims.Tk !== T) {
    throw new ProtocolError("invalid_tensor", `Cannot differentiate attention: Tq ${T} != Tk ${dims.Tk}`);
  }
  checkSizes(dims, [["dOut", dOut, B * T], ["q", q, B * T], ["k", k, B * T], ["v", v, B * T]]);
  if (cache.p.length < B * H * T * T) {
    throw new ProtocolError(
      "invalid_tensor",
      `Cannot differentiate attention: p has ${cache.p.length} elements, expected at least ${B * H * T * T}`,
    );
  }
  return fastOr(() => {
    const r = wasmAttentionBackward(dOut, q, k, v, cache.p, dims);
    if (r === null) return null;
    assertFinite(r.dq, "attention query gradient");
    assertFinite(r.dk, "attention key gradient");
    assertFinite(r.dv, "attention value gradient");
    return r;
  }, () => attentionBackwardReference(dOut, q, k, v, cache, dims));
}

/** The definition as plain loops over the matmul: q, k, v → out and the probabilities. */
export function attentionForwardReference(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  dims: AttentionDims,
): { out: Float32Array; cache: AttentionCache } {
  checkDims(dims);
  const { B, Tq, Tk, H, KVH, D } = dims;
  const rep = H / KVH;
  const sigma = fr(1 / Math.sqrt(D));
  const out = new Float32Array(B * Tq * H * D); // out: [B·Tq, H·D]
  const p = new Float32Array(B * H * Tq * Tk); // p: [B, H, Tq, Tk]
  const s = new Float32Array(Tq * Tk); // s: [Tq, Tk]
  const o = new Float32Array(Tq * D); // o: [Tq, D]
  for (let b = 0; b < B; b++) {
    for (let g = 0; g < KVH; g++) {
      const kg = gather(k, b, Tk, KVH, g, D); // kg: [Tk, D]
      const vg = gather(v, b, Tk, KVH, g, D); // vg: [Tk, D]
      for (let h = g * rep; h < (g + 1) * rep; h++) {
        const qh = gather(q, b, Tq, H, h, D); // qh: [Tq, D]
        matmul(qh, kg, s, Tq, D, Tk, "nt");
        const ph = p.subarray((b * H + h) * Tq * Tk, (b * H + h + 1) * Tq * Tk); // ph: [Tq, Tk]
        for (let i = 0; i < Tq; i++) {
          const last = Tk - Tq + i;
          const row = i * Tk;
          let m = fr(s[row]! * sigma);
          for (let j = 1; j <= last; j++) {
            const sj = fr(s[row + j]! * sigma);
            if (sj > m) m = sj;
          }
          let z = 0;
          for (let j = 0; j <= last; j++) {
            const e = expf(fr(fr(s[row + j]! * sigma) - m));
            ph[row + j] = e;
            z = fr(z + e);
          }
          for (let j = 0; j <= last; j++) ph[row + j] = fr(ph[row + j]! / z);
        }
        assertFinite(ph, "attention probabilities");
        matmul(ph, vg, o, Tq, Tk, D, "nn");
        const W = H * D;
        for (let i = 0; i < Tq; i++) out.set(o.subarray(i * D, i * D + D), (b * Tq + i) * W + h * D);
      }
    }
  }
  assertFinite(out, "attention output");
  return { out, cache: { p } };
}

/** The definition of the backward as plain loops over the matmul (training shapes, Tq = Tk = T). */
export function attentionBackwardReference(
  dOut: Float32Array,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  cache: AttentionCache,
  dims: AttentionDims,
): { dq: Float32Array; dk: Float32Array; dv: Float32Array } {
  checkDims(dims);
  const { B, Tq: T, H, KVH, D } = dims;
  if (dims.Tk !== T) {
    throw new ProtocolError("invalid_tensor", `Cannot differentiate attention: Tq ${T} != Tk ${dims.Tk}`);
  }
  const rep = H / KVH;
  const sigma = fr(1 / Math.sqrt(D));
  const dq = new Float32Array(B * T * H * D); // dq: [B·T, H·D]
  const dk = new Float32Array(B * T * KVH * D); // dk: [B·T, KVH·D]
  const dv = new Float32Array(B * T * KVH * D); // dv: [B·T, KVH·D]
  const dp = new Float32Array(T * T); // dp: [T, T]
  const ds = new Float32Array(T * T); // ds: [T, T]
  const part = new Float32Array(T * D); // part: [T, D]
  for (let b = 0; b < B; b++) {
    for (let g = 0; g < KVH; g++) {
      const kg = gather(k, b, T, KVH, g, D); // kg: [T, D]
      const vg = gather(v, b, T, KVH, g, D); // vg: [T, D]
      for (let h = g * rep; h < (g + 1) * rep; h++) {
        const qh = gather(q, b, T, H, h, D); // qh: [T, D]
        const doh = gather(dOut, b, T, H, h, D); // doh: [T, D]
        const ph = cache.p.subarray((b * H + h) * T * T, (b * H + h + 1) * T * T); // ph: [T, T]
        matmul(doh, vg, dp, T, D, T, "nt");
        ds.fill(0);
        for (let i = 0; i < T; i++) {
          const row = i * T;
          let rho = 0;
          for (let j = 0; j <= i; j++) rho = fr(rho + fr(ph[row + j]! * dp[row + j]!));
          for (let j = 0; j <= i; j++) ds[row + j] = fr(fr(ph[row + j]! * fr(dp[row + j]! - rho)) * sigma);
        }
        matmul(ds, kg, part, T, T, D, "nn");
        scatterAdd(dq, part, b, T, H, h, D);
        matmul(ds, qh, part, T, T, D, "tn");
        scatterAdd(dk, part, b, T, KVH, g, D);
        matmul(ph, doh, part, T, T, D, "tn");
        scatterAdd(dv, part, b, T, KVH, g, D);
      }
    }
  }
  assertFinite(dq, "attention query gradient");
  assertFinite(dk, "attention key gradient");
  assertFinite(dv, "attention value gradient");
  return { dq, dk, dv };
}
