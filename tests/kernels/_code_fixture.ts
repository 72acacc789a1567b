// Q4_1 weights as a GGUF import has them, for the tests of the kernels that read code panels.
import { PRESETS } from "../../kernels/config.ts";
import { halfToFloat } from "../../kernels/gguf_dequant.ts";
import { initModel, type Model } from "../../kernels/model.ts";
import { rng } from "./_matmul_util.ts";

/**
 * A weight [N, K] as a GGUF Q4_1 import has it: per 32 values of a row an fp16 scale d ≥ 0 and min m, and
 * codes 0…15, each value fround(q·d + m) (q·d exact), as `gguf_dequant.ts` decodes them. Every block holds a
 * code 0 (the quantiser maps a block's minimum to it) and most a code 15 (its maximum).
 */
export function q41(bits: () => number, N: number, K: number): Float32Array {
  const next = () => bits() / 2 ** 32; // uniform in [0, 1)
  const w = new Float32Array(N * K);
  for (let b = 0; b < (N * K) / 32; b++) {
    const d = halfToFloat(0x1000 + Math.floor(next() * 0x2000)); // 2^-12 … 2^-4
    const m = -halfToFloat(0x1400 + Math.floor(next() * 0x2400));
    for (let i = 0; i < 32; i++) {
      // code 0 somewhere; code 15 too in most blocks (the quantiser's maximum), not in every tenth
      const q = i === 7 ? 0 : i === 20 && b % 10 !== 0 ? 15 : Math.floor(next() * (b % 10 === 0 ? 12 : 16));
      w[32 * b + i] = q * d + m;
    }
  }
  return w;
}

/** A model whose every matrix is a Q4_1 import's (the devnet preset's shapes are multiples of 16 and 32). */
export function q41Model(seed: number): Model {
  const model = initModel(PRESETS.devnet, seed), next = rng(seed);
  for (const c of Object.values(model.components)) {
    for (const t of Object.values(c)) {
      if (t.shape.length === 2) t.data.set(q41(next, t.shape[0]!, t.shape[1]!));
    }
  }
  return model;
}
