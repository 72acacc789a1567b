/**
 * One decoded token (a single id at the cache's next position) through every block without leaving the
 * kernels' memory: the fast path of `decodeHidden` for a resident model whose block matrices all have code
 * panels (a quantised import made resident: `makeModelResident`) and a resident key/value cache. The same
 * bits as the general path, step by step:
 *
 * - each norm, residual sum and rotary embedding is one call of a row function of `softmax.wat`
 *   (`rmsnorm_row`, `add_row`, `rotary_row`), the TypeScript definition's operations in its order;
 * - each product is the code-panel kernel (`matvec_codes`) over the same panels, split by whole panels over
 *   the kernel threads as `matmulInMemory` splits it (`CODE_JOBS_PER_THREAD` jobs a thread);
 * - attention and the gated product are the kernels the general path calls (`attention_forward`, `silu`).
 *
 * What the general path does in TypeScript around them — a new array for every intermediate, the inputs
 * copied into the kernels' memory and the outputs out of it, each checked element by element — is here a
 * fixed arena after the resident region and one SIMD finiteness check per output (`all_finite`). That was
 * ~2 ms of a SmolLM2 token on two threads.
 *
 * Errors: nothing here raises one. When any value the general path would check is not finite (or a step
 * would refuse its input), `decodeHiddenFast` returns null having changed nothing but rows of the cache at
 * the new position, which the general path, run next for the same token, writes again before it raises the
 * definition's own error. It also returns null (and the general path runs) whenever it does not apply.
 * @module
 */

import { mlpWeightsOf, qkvWeightsOf } from "./block.ts";
import { headDim, type ModelConfig } from "./config.ts";
import type { KvCache } from "./generation.ts";
import { FORCE_REFERENCE } from "./matmul.ts";
import { blockName, EMBED_TENSOR, type Model } from "./model.ts";
import { RMSNORM_PERTURBED } from "./rmsnorm.ts";
import type { RotaryTables } from "./rotary.ts";
import { kernelThreads } from "./threads.ts";
import {
  allocResident,
  ATTENTION_FORWARD_KERNEL,
  ensureBytes,
  type KernelMemory,
  kernelMemory,
  residentFloat32,
  scratchBase,
  SILU_KERNEL,
} from "./wasm/kernel_memory.ts";
import { codedB, type CodePanels, codeSplit, runCodeJobs } from "./wasm/matmul_wasm.ts";
import { codeRun, panelRun } from "./wasm/matmul_group_wasm.ts";
import { CODE_PANEL_COLUMNS } from "./wasm/code_panels.ts";
import { runSoftmaxJobs, unitSplit } from "./wasm/softmax_wasm.ts";

/**
 * The products of one input on code panels (q, k and v; gate and up; or one matrix): one call over the
 * group's run of panels where `makeResident` made one (`codeRun`), else one call per matrix. Output g starts
 * at column `cols[g]` of an output of `N` columns (whole panels of 16).
 */
interface Products {
  readonly calls: readonly { readonly codes: CodePanels; readonly N: number; readonly col: number }[];
  readonly cols: readonly number[];
  readonly N: number;
}

/**
 * Below this much work (H·Tk·D) a token's attention stays on the calling thread. Lower than the general
 * path's `SOFTMAX_THREAD_MIN_WORK`: with nothing copied around it, splitting SmolLM2's 9 heads in two pays
 * from ~30 positions (0.5 ms a token at 2 threads after 64).
 */
export const ATTENTION_SPLIT_MIN = 1 << 14;

/** One block's products and norms. */
interface BlockPlan {
  readonly inNorm: number; // resident copies of the block's norm weights [C]
  readonly postNorm: number;
  readonly qkv: Products;
  readonly o: Products;
  readonly gateUp: Products;
  readonly down: Products;
}

/** n columns rounded up to whole code panels. */
const pad = (n: number) => Math.ceil(n / CODE_PANEL_COLUMNS) * CODE_PANEL_COLUMNS;

/** The products of `ws` (each [N_g, K]) on code panels, or null when one has none. */
function productsOf(ws: readonly Float32Array[], K: number, Ns: readonly number[]): Products | null {
  const run = ws.length > 1 ? panelRun(ws, K, Ns) : null;
  const codes = run === null ? null : codeRun(ws, K, Ns, run.cols);
  if (run !== null && codes !== null) {
    return { calls: [{ codes, N: run.N, col: 0 }], cols: run.cols, N: run.N };
  }
  const calls = [], cols = [];
  let N = 0;
  for (let g = 0; g < ws.length; g++) {
    const codes = codedB(ws[g]!, K, Ns[g]!);
    if (codes === null) return null;
    calls.push({ codes, N: Ns[g]!, col: N });
    cols.push(N);
    N += pad(Ns[g]!);
  }
  return { calls, cols, N };
}

/**
 * By model: each block's plan (null when some product has no code panels: the general path runs), and the
 * tensors it was made from. A model whose tensors were replaced since (made resident, grown) gets a new one.
 */
const PLANS = new WeakMap<
  Model,
  { readonly tensors: Snapshot; readonly plan: readonly BlockPlan[] | null }
>();

function planOf(model: Model, km: KernelMemory): readonly BlockPlan[] | null {
  const known = PLANS.get(model);
  if (known !== undefined && current(model, known.tensors)) return known.plan;
  let plan: readonly BlockPlan[] | null;
  try {
    plan = makePlan(model, km);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    plan = null; // no room for the norms' copies: the general path, for good
  }
  PLANS.set(model, { tensors: snapshot(model), plan });
  return plan;
}

/** Every block's tensors by name, in order. */
type Snapshot = readonly (readonly (readonly [string, Float32Array])[])[];

function snapshot(model: Model): Snapshot {
  return Array.from(
    { length: model.config.num_hidden_layers },
    (_, l) =>
      Object.entries(model.components[blockName(l)] ?? {}).map(([name, t]) => [name, t.data] as const),
  );
}

/** True when every block still has the tensors of `was` (resident tensors are never written in place). */
function current(model: Model, was: Snapshot): boolean {
  return was.length === model.config.num_hidden_layers && was.every((tensors, l) => {
    const p = model.components[blockName(l)];
    return p !== undefined && Object.keys(p).length === tensors.length &&
      tensors.every(([name, t]) => p[name]?.data === t);
  });
}

function makePlan(model: Model, km: KernelMemory): readonly BlockPlan[] | null {
  const c = model.config, C = c.hidden_size, I = c.intermediate_size;
  const KV = c.num_key_value_heads * headDim(c);
  const blocks: BlockPlan[] = [];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = model.components[blockName(l)];
    if (p === undefined) return null;
    const qkvW = qkvWeightsOf(p), m = mlpWeightsOf(p), o = p["self_attn.o_proj.weight"]?.data;
    const inW = p["input_layernorm.weight"]?.data, postW = p["post_attention_layernorm.weight"]?.data;
    if (o === undefined || inW === undefined || postW === undefined) return null;
    const qkv = productsOf(qkvW, C, [C, KV, KV]), gateUp = productsOf([m.gate, m.up], C, [I, I]);
    const oP = productsOf([o], C, [C]), down = productsOf([m.down], I, [C]);
    if (qkv === null || gateUp === null || oP === null || down === null) return null;
    blocks.push({
      inNorm: residentCopy(km, inW),
      postNorm: residentCopy(km, postW),
      qkv,
      o: oP,
      gateUp,
      down,
    });
  }
  return blocks;
}

/** A copy of a small tensor (a norm's weights) in the resident region, for good; its offset. */
function residentCopy(km: KernelMemory, x: Float32Array): number {
  const at = allocResident(km, 4 * x.length);
  residentFloat32(km, at, x.length).set(x);
  return at;
}

/** Byte offsets handed out one after another from `start`, each 64-byte aligned. */
class Arena {
  constructor(public end: number) {}
  floats(n: number): number {
    const at = this.end;
    this.end += Math.ceil(n / 16) * 64;
    return at;
  }
}

/**
 * The last block's output [1, C] for token `id` at position `cache.length`, advancing the cache: exactly
 * `decodeHidden(model, cache, [id], tables)`'s bits. Null when the fast path does not apply or a value is
 * not finite (see the module documentation); the caller then runs the general path for the same token.
 * The caller has reserved the cache's room for the new position.
 */
export function decodeHiddenFast(
  model: Model,
  cache: KvCache,
  id: number,
  tables: RotaryTables,
): Float32Array | null {
  const km = kernelMemory();
  if (km === null || FORCE_REFERENCE || RMSNORM_PERTURBED || !cache.resident) return null;
  const c = model.config, C = c.hidden_size, D = headDim(c), h = D / 2, at = cache.length;
  const V = c.vocab_size, embed = model.components.embed?.[EMBED_TENSOR]?.data;
  if (embed === undefined || !Number.isInteger(id) || id < 0 || id >= V) return null;
  if (tables.half !== h || h % 4 !== 0 || at + 1 > tables.positions || cache.capacity < at + 1) return null;
  if (c.num_attention_heads % c.num_key_value_heads !== 0) return null;
  try {
    const plan = planOf(model, km);
    return plan === null ? null : run(km, plan, c, cache, embed.subarray(id * C, id * C + C), tables, at);
  } catch (e) {
    if (e instanceof RangeError) return null; // the kernels' memory could not grow: the general path decides
    throw e;
  }
}

function run(
  km: KernelMemory,
  plan: readonly BlockPlan[],
  c: ModelConfig,
  cache: KvCache,
  row: Float32Array,
  tables: RotaryTables,
  at: number,
): Float32Array | null {
  const C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads, KVH = c.num_key_value_heads;
  const D = headDim(c), h = D / 2, KV = KVH * D, Tk = at + 1, eps = Math.fround(c.rms_norm_eps);
  const threads = km.pool.disabled === null ? kernelThreads() : 1;
  const a = new Arena(scratchBase());
  const x = a.floats(C), n = a.floats(C), res = a.floats(C), cs = a.floats(h), sn = a.floats(h);
  const qkv = a.floats(pad(Math.max(...plan.map((b) => b.qkv.N))));
  const ao = a.floats(C), o = a.floats(pad(C)), dn = a.floats(pad(C)), hh = a.floats(I);
  const gu = a.floats(pad(Math.max(...plan.map((b) => b.gateUp.N))));
  const params = a.floats(16), p = a.floats(H * Tk);
  const heads = unitSplit(H, H * Tk * D, threads, ATTENTION_SPLIT_MIN);
  const per = Math.ceil(D * Tk / 16) * 64; // bytes of each attention job's keys transposed, kT [D, Tk]
  const kT = a.floats(0);
  ensureBytes(km, kT + heads.length * per); // throws RangeError when refused
  const buf = km.memory.buffer, mm = km.matmul, sm = km.softmax;
  new Float32Array(buf, x, C).set(row);
  new Float32Array(buf, cs, h).set(tables.cos.subarray(at * h, at * h + h));
  new Float32Array(buf, sn, h).set(tables.sin.subarray(at * h, at * h + h));
  const finite = (from: number, count: number) => mm.all_finite(from, count) === 1;
  const products = (input: number, ps: Products, out: number, K: number) => {
    for (const { codes, N, col } of ps.calls) {
      runCodeJobs(km, input, codes, out + 4 * col, K, codeSplit(K, N, threads), threads);
    }
  };
  for (let l = 0; l < plan.length; l++) {
    const b = plan[l]!;
    if (sm.rmsnorm_row(x, b.inNorm, n, C, eps) !== 1) return null;
    products(n, b.qkv, qkv, C);
    const q = qkv + 4 * b.qkv.cols[0]!, k = qkv + 4 * b.qkv.cols[1]!, v = qkv + 4 * b.qkv.cols[2]!;
    if (!finite(q, C) || !finite(k, KV) || !finite(v, KV)) return null;
    sm.rotary_row(q, cs, sn, H, D);
    sm.rotary_row(k, cs, sn, KVH, D);
    const keys = cache.k[l]!, values = cache.v[l]!;
    keys.set(new Float32Array(buf, k, KV), at * KV);
    values.set(new Float32Array(buf, v, KV), at * KV);
    if (!finite(values.byteOffset, Tk * KV)) return null; // the kernel's precondition (softmax_wasm.ts)
    new Int32Array(buf, params, 12).set([
      q,
      keys.byteOffset,
      values.byteOffset,
      ao,
      p,
      kT,
      1,
      Tk,
      H,
      KVH,
      D,
      per,
    ]);
    runSoftmaxJobs(km, ATTENTION_FORWARD_KERNEL, params, heads);
    if (!finite(p, H * Tk) || !finite(ao, C)) return null;
    products(ao, b.o, o, C);
    if (!finite(o, C) || sm.add_row(x, o, res, C) !== 1) return null;
    if (sm.rmsnorm_row(res, b.postNorm, n, C, eps) !== 1) return null;
    products(n, b.gateUp, gu, C);
    const g = gu + 4 * b.gateUp.cols[0]!, u = gu + 4 * b.gateUp.cols[1]!;
    if (!finite(g, I) || !finite(u, I)) return null;
    new Int32Array(buf, params, 3).set([g, u, hh]);
    runSoftmaxJobs(km, SILU_KERNEL, params, [[0, I]]);
    if (!finite(hh, I)) return null;
    products(hh, b.down, dn, I);
    if (!finite(dn, C) || sm.add_row(res, dn, x, C) !== 1) return null;
  }
  cache.length = at + 1;
  return new Float32Array(buf, x, C).slice();
}
