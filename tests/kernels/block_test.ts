import { blockBackward, blockForward } from "../../kernels/block.ts";
import type { ModelConfig } from "../../kernels/config.ts";
import { blockSpec } from "../../kernels/model.ts";
import { rotaryTables } from "../../kernels/rotary.ts";
import type { Tensors } from "../../kernels/safetensors.ts";
import { sizeOf } from "../../kernels/tensor.ts";
import { gradcheck, randomArray, rng } from "./_gradcheck.ts";

Deno.test("block backward matches finite differences for the input and all nine weights", () => {
  const c: ModelConfig = {
    vocab_size: 8,
    hidden_size: 8,
    intermediate_size: 12,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    max_position_embeddings: 4,
  };
  const B = 2, T = 3, seed = 21;
  const next = rng(seed);
  const names = Object.keys(blockSpec(c)).sort();
  const weights = names.map((n) =>
    randomArray(next, sizeOf(blockSpec(c)[n]!), n.includes("layernorm") ? 1 : 0.5)
  );
  const x = randomArray(next, B * T * c.hidden_size);
  const tables = rotaryTables(T, 4, c.rope_theta);
  const pack = (ws: Float32Array[]): Tensors =>
    Object.fromEntries(names.map((n, i) => [n, { shape: blockSpec(c)[n]!, data: ws[i]! }]));
  gradcheck(
    "block",
    seed,
    [x, ...weights],
    ([x, ...ws]) => [blockForward(x!, pack(ws), c, B, T, tables).y],
    ([dy]) => {
      const p = pack(weights);
      const { cache } = blockForward(x, p, c, B, T, tables);
      const g = blockBackward(dy!, cache, p, c, B, T, tables);
      return [g.dx, ...names.map((n) => g.grads[n]!.data)];
    },
    1e-2,
    3e-3,
  );
});
