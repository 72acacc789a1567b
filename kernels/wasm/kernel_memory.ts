/**
 * The kernels' one shared WebAssembly memory, the modules that run on it and the worker pool that runs them
 * on more cores: the deterministic matmul (`matmul.wat`, kernel 0), the one-row kernels on prepacked panels
 * and on code panels (`matmul.wat`, kernels 6 and 9), the drafter's non-consensus int8 kernel four rows at a
 * time (`draft.wat`, kernel 10, which runs the one-row kernel for the rows left over) and the exact head
 * argmax's bounds on its results (kernel 1), and the deterministic softmax kernels (`softmax.wat`: attention
 * forward and backward by head, kernels 2 and 3; the head's vocabulary exponentials and gradient, kernels 4
 * and 5; the MLP's gated product and its backward, kernels 7 and 8). All are compiled synchronously from
 * embedded bytes, so loading needs no permissions.
 *
 * The memory starts with a resident region — long-lived buffers such as the drafter's quantised weights,
 * handed out by `allocResident` and never freed — followed by the scratch space of each call. The memory
 * only grows (up to 4 GiB); views made before a growth stay valid, since shared memory is never detached.
 * @module
 */

import { MAX_THREADS } from "../threads.ts";
import { decodeBase64 } from "./assemble_base64.ts";
import { DRAFT_WASM_BASE64 } from "./draft_wasm_bytes.ts";
import { MATMUL_WASM_BASE64 } from "./matmul_wasm_bytes.ts";
import { SOFTMAX_WASM_BASE64 } from "./softmax_wasm_bytes.ts";
import { KernelPool } from "./pool.ts";

/** Index of the matmul kernel in pool jobs. */
export const MATMUL_KERNEL = 0;
/** Index of the exact head argmax's bounds (`head_bounds` in `draft.wat`) in pool jobs. */
export const HEAD_BOUNDS_KERNEL = 1;
/** Index of the attention forward kernel (units of one batch row and head) in pool jobs. */
export const ATTENTION_FORWARD_KERNEL = 2;
/** Index of the attention backward kernel in pool jobs. */
export const ATTENTION_BACKWARD_KERNEL = 3;
/** Index of the head's vocabulary exponentials kernel in pool jobs. */
export const VOCAB_EXP_KERNEL = 4;
/** Index of the head's vocabulary gradient kernel in pool jobs. */
export const VOCAB_GRADIENT_KERNEL = 5;
/** Index of the one-row matmul on prepacked panels (`matvec`, decoding one token) in pool jobs. */
export const MATVEC_KERNEL = 6;
/** Index of the MLP's gated product (`silu`, elementwise) in pool jobs. */
export const SILU_KERNEL = 7;
/** Index of the MLP's gated product backward (`silu_backward`, elementwise) in pool jobs. */
export const SILU_BACKWARD_KERNEL = 8;
/** Index of the one-row matmul on code panels (`matvec_codes`, decoding one token) in pool jobs. */
export const MATVEC_CODES_KERNEL = 9;
/** Index of the int8 matrix-vector kernel four rows at a time (`q8_matvec4`, the same values) in pool jobs. */
export const Q8_MATVEC4_KERNEL = 10;
/** Index of the one-row matmul on nibble code panels (`matvec_nibbles`, decoding one token) in pool jobs. */
export const MATVEC_NIBBLES_KERNEL = 11;

/** The loaded memory, the calling thread's instances and the pool. */
export interface KernelMemory {
  readonly memory: WebAssembly.Memory;
  readonly pool: KernelPool;
  readonly matmul: MatmulExports;
  readonly draft: DraftExports;
  readonly softmax: SoftmaxExports;
}

/** What `matmul.wat` exports. */
export interface MatmulExports {
  tile_rows: WebAssembly.Global;
  tile_cols: WebAssembly.Global;
  panel_group: WebAssembly.Global;
  k_block: WebAssembly.Global;
  matmul(...args: number[]): void;
  matvec(...args: number[]): void;
  matvec_codes(a: number, b: number, c: number, K: number, jlo: number, jhi: number): void;
  matvec_nibbles(a: number, b: number, c: number, K: number, jlo: number, jhi: number): void;
  pack_b_all(src: number, dst: number, K: number, N: number, bT: number): void;
  all_finite(p: number, n: number): number;
}

/**
 * What `softmax.wat` exports: each kernel takes (parameter block, part, lo, hi); `exp64` and `expf4` are for
 * tests; the row functions (`rmsnorm_row`, `add_row`, `rotary_row`) are a decoded token's elementwise steps
 * on the calling thread (`kernels/decode_fast.ts`).
 */
export interface SoftmaxExports {
  attention_forward(at: number, part: number, lo: number, hi: number): void;
  attention_backward(at: number, part: number, lo: number, hi: number): void;
  vocab_exp(at: number, part: number, lo: number, hi: number): void;
  vocab_gradient(at: number, part: number, lo: number, hi: number): void;
  silu(at: number, part: number, lo: number, hi: number): void;
  silu_backward(at: number, part: number, lo: number, hi: number): void;
  exp64(x: number): number;
  expf4(x: number, y: number): void;
  rmsnorm_row(x: number, w: number, y: number, C: number, eps: number): number;
  add_row(a: number, b: number, out: number, n: number): number;
  rotary_row(x: number, cos: number, sin: number, heads: number, D: number): void;
}

/** What `draft.wat` exports. */
export interface DraftExports {
  q8_matvec(...args: number[]): void;
  q8_matvec4(...args: number[]): void;
  head_bounds(at: number, part: number, lo: number, hi: number): void;
  head_candidates(hi: number, n: number, low: number, out: number): number;
}

/** Bytes in a WebAssembly page. */
export const PAGE = 65536;
const MAX_PAGES = 65536;
/** The largest end offset of any buffer: keeps every byte offset below 2^32 in the modules' i32 arithmetic. */
export const MAX_BYTES = MAX_PAGES * PAGE - PAGE;

let loaded: KernelMemory | null | undefined;
let residentEnd = 0;
const residentBuffers = new WeakSet<ArrayBufferLike>(); // every memory.buffer a resident view was made on

/** The kernels' memory and modules, or null when this runtime lacks WebAssembly SIMD or shared memory. */
export function kernelMemory(): KernelMemory | null {
  if (loaded !== undefined) return loaded;
  try {
    const matmul = new WebAssembly.Module(decodeBase64(MATMUL_WASM_BASE64));
    const draft = new WebAssembly.Module(decodeBase64(DRAFT_WASM_BASE64));
    const softmax = new WebAssembly.Module(decodeBase64(SOFTMAX_WASM_BASE64));
    const memory = new WebAssembly.Memory({ initial: 1, maximum: MAX_PAGES, shared: true });
    const env = { env: { memory } };
    loaded = {
      memory,
      pool: new KernelPool(
        [
          [matmul, "matmul"],
          [draft, "head_bounds"],
          [softmax, "attention_forward"],
          [softmax, "attention_backward"],
          [softmax, "vocab_exp"],
          [softmax, "vocab_gradient"],
          [matmul, "matvec"],
          [softmax, "silu"],
          [softmax, "silu_backward"],
          [matmul, "matvec_codes"],
          [draft, "q8_matvec4"],
          [matmul, "matvec_nibbles"],
        ],
        memory,
        MAX_THREADS - 1,
      ),
      matmul: new WebAssembly.Instance(matmul, env).exports as unknown as MatmulExports,
      draft: new WebAssembly.Instance(draft, env).exports as unknown as DraftExports,
      softmax: new WebAssembly.Instance(softmax, env).exports as unknown as SoftmaxExports,
    };
  } catch {
    loaded = null; // no WebAssembly SIMD or shared memory in this runtime: the reference path applies
  }
  return loaded;
}

/**
 * Asks the kernel workers polling for their next call to sleep now (`KernelPool.rest`); nothing when the
 * kernels were never loaded. The task pool calls it before it hands out work.
 */
export function restKernelWorkers(): void {
  loaded?.pool.rest();
}

/** Grows the memory to at least `end` bytes; throws RangeError when the memory cannot grow. */
export function ensureBytes(km: KernelMemory, end: number): void {
  if (end > MAX_BYTES) {
    throw new RangeError(`Cannot grow the kernel memory to ${end} bytes: at most ${MAX_BYTES}`);
  }
  const have = km.memory.buffer.byteLength;
  if (end > have) km.memory.grow(Math.ceil((end - have) / PAGE));
}

/** Where each call's scratch space begins: after every resident buffer, 64-byte aligned. */
export function scratchBase(): number {
  return residentEnd;
}

/**
 * Reserves `bytes` of the resident region (64-byte aligned; never freed) and returns its byte offset.
 * Throws RangeError when the memory cannot hold it.
 */
export function allocResident(km: KernelMemory, bytes: number): number {
  const at = residentEnd;
  const end = at + Math.ceil(bytes / 64) * 64;
  ensureBytes(km, end);
  residentEnd = end;
  return at;
}

/**
 * The most bytes of reusable resident blocks (`takeBlock`) this process keeps, in use or free: beyond it a
 * caller keeps its buffer in ordinary memory (a generation's key/value cache: `kernels/generation.ts`).
 */
export const BLOCK_MAX_BYTES = 512 * 2 ** 20;
const BLOCK_MIN_BYTES = 64 * 1024;
const freeBlocks = new Map<number, number[]>(); // size class (bytes) → offsets of released blocks
const blockSizes = new Map<number, number>(); // offset → size class, for every block ever handed out
let blockBytes = 0; // bytes of every block ever handed out (the resident region never shrinks)

/**
 * A resident block of at least `bytes` (a power of two from 64 KiB, so released blocks are reused by later
 * callers of similar sizes): a released one of that size when there is one, else a new one from
 * `allocResident`. Null when the blocks would pass `BLOCK_MAX_BYTES` or the memory cannot grow: the caller
 * then keeps its buffer elsewhere. Give it back with `releaseBlock` once no view of it is used any more.
 */
export function takeBlock(km: KernelMemory, bytes: number): number | null {
  let size = BLOCK_MIN_BYTES;
  while (size < bytes) size *= 2;
  const reused = freeBlocks.get(size)?.pop();
  if (reused !== undefined) return reused;
  if (blockBytes + size > BLOCK_MAX_BYTES) return null;
  let at: number;
  try {
    at = allocResident(km, size);
  } catch (e) {
    if (e instanceof RangeError) return null;
    throw e;
  }
  blockBytes += size;
  blockSizes.set(at, size);
  return at;
}

/** Returns a block from `takeBlock` for reuse; throws on an offset that is not a block or a second release. */
export function releaseBlock(at: number): void {
  const size = blockSizes.get(at);
  const free = size === undefined ? undefined : freeBlocks.get(size) ?? [];
  if (size === undefined || free!.includes(at)) {
    throw new Error(`Cannot release resident block ${at}: not a block in use`);
  }
  free!.push(at);
  freeBlocks.set(size, free!);
}

/** Bytes of reusable blocks handed out so far (in use or released): at most `BLOCK_MAX_BYTES`. */
export function blockBytesTaken(): number {
  return blockBytes;
}

/** A float32 view of `n` values at byte offset `at` of the resident region (from `allocResident`). */
export function residentFloat32(km: KernelMemory, at: number, n: number): Float32Array {
  const buf = km.memory.buffer;
  residentBuffers.add(buf);
  return new Float32Array(buf, at, n);
}

/** True when `x` is a view into the resident region, so a kernel can read it where it is, without a copy. */
export function isResident(x: Float32Array): boolean {
  return residentBuffers.has(x.buffer) && x.byteOffset + x.byteLength <= residentEnd;
}
