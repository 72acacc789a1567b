/**
 * One WebAssembly call for the linear layers of one input (a block's q, k and v projections; the MLP's gate
 * and up): C_g = A·B_gᵀ for each B_g stored [N_g, K], the bits of a `wasmMatmul` per B_g.
 *
 * Separate calls copy A into the kernel memory, pack it and wake the pool once per B, and a narrow B (k, v
 * for one token) stays on one thread. When `makeResident` packed the B_g's panels next to each other
 * (`together`), they are read as one B [ΣN, K]: the group is one matmul of width ΣN, split by columns over
 * the threads like any other (`columnSplit`), and each C_g is copied out of its columns of the one C. Every
 * output element is still one column's k loop from +0 in ascending k, so grouping never changes a bit.
 * Otherwise (a model not resident, as in training) the B_g run one by one.
 * @module
 */

import { kernelMemory } from "./kernel_memory.ts";
import { copyFloats } from "../parallel_copy.ts";
import { kernelThreads } from "../threads.ts";
import { codedB, type CodePanels, matmulInMemory, packedB, wasmMatmul } from "./matmul_wasm.ts";
import { CODE_PANEL_COLUMNS, codePanelBytes } from "./code_panels.ts";

/**
 * C_g = A·B_gᵀ (layout "nt": A [M,K], B_g [N_g,K], C_g [M,N_g]) for every g, on up to `threads` threads.
 * Arguments must already be valid (`validateMatmul` for each g). Throws as `wasmMatmul` does (RangeError when
 * the memory cannot grow: the caller then runs the matmuls one by one). With `check`, returns per output
 * whether every value is finite; without, all true.
 */
export function wasmMatmulGroup(
  a: Float32Array,
  bs: readonly Float32Array[],
  outs: readonly Float32Array[],
  M: number,
  K: number,
  Ns: readonly number[],
  threads: number = kernelThreads(),
  check = false,
): boolean[] {
  const run = panelRun(bs, K, Ns);
  if (run === null) return bs.map((b, g) => wasmMatmul(a, b, outs[g]!, M, K, Ns[g]!, "nt", threads, check));
  const { N, cols } = run;
  const codes = codeRun(bs, K, Ns, cols); // read by a one-row call only (matmulInMemory)
  const c = matmulInMemory(a, M, K, N, "nt", threads, { at: run.at, packed: true, codes });
  const km = kernelMemory()!, buf = km.memory.buffer;
  return outs.map((out, g) => {
    const n = Ns[g]!, at = c + 4 * cols[g]!; // C_g's first row in C [M,N]
    if (M === 1) return copyFloats(new Float32Array(buf, at, n), out, check, threads);
    let finite = true;
    for (let i = 0; i < M; i++) {
      out.set(new Float32Array(buf, at + 4 * N * i, n), n * i);
      if (check && finite) finite = km.matmul.all_finite(at + 4 * N * i, n) === 1;
    }
    return finite;
  });
}

/**
 * When every B_g's panels are packed (`makeResident`) and together form one run of panels: where the run
 * starts, its width N (in columns of whole panels, the last one's padding past its B excepted) and each B_g's
 * first column in it; else null.
 */
export function panelRun(
  bs: readonly Float32Array[],
  K: number,
  Ns: readonly number[],
): { at: number; N: number; cols: number[] } | null {
  const ats = bs.map((b, g) => packedB(b, 1, K, Ns[g]!));
  if (K === 0 || ats.some((at) => at === null)) return null;
  const panel = 48 * K; // bytes of one packed panel of 12 columns
  const order = bs.map((_, g) => g).sort((x, y) => ats[x]! - ats[y]!);
  const at = ats[order[0]!]!;
  let end = at;
  for (const g of order) {
    if (ats[g] !== end) return null;
    end += Math.ceil(Ns[g]! / 12) * panel;
  }
  const cols = ats.map((p) => 12 * ((p! - at) / panel));
  const last = order[order.length - 1]!;
  return { at, N: cols[last]! + Ns[last]!, cols };
}

/**
 * Where the group's code panels start, and their form, when every B_g has them (`makeResident`) in one form
 * one after another, each at the columns `cols` its float32 panels have in their run (so C [M, N] is laid out
 * the same); else null.
 */
export function codeRun(
  bs: readonly Float32Array[],
  K: number,
  Ns: readonly number[],
  cols: readonly number[],
): CodePanels | null {
  const each = bs.map((b, g) => codedB(b, K, Ns[g]!));
  if (each.some((p) => p === null || p.form !== each[0]!.form)) return null;
  const at = Math.min(...each.map((p) => p!.at));
  const panel = codePanelBytes(CODE_PANEL_COLUMNS, K, each[0]!.form);
  const inOrder = each.every((p, g) => p!.at - at === (cols[g]! / CODE_PANEL_COLUMNS) * panel);
  return inOrder ? { at, form: each[0]!.form } : null;
}
