import assert from "node:assert/strict";
import { ObjectStore } from "../../../core/object_store.ts";
import { computeAnswer, ModelCache } from "../../../actors/provider/answer.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { storeModel } from "../../../kernels/manifest.ts";
import { initModel } from "../../../kernels/model.ts";
import { kernelThreads, setKernelThreads } from "../../../kernels/threads.ts";
import { isResident } from "../../../kernels/wasm/kernel_memory.ts";
import { wasmMatmulAvailable } from "../../../kernels/wasm/matmul_wasm.ts";

Deno.test("a Provider's model is made resident as it loads, and its answers are the bits of the model read in place", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "provider-answer-" }), before = kernelThreads();
  try {
    const store = new ObjectStore(dir);
    const { root } = await storeModel(store, initModel(PRESETS.devnet, 11), {
      origin: { kind: "init", seed: 11 },
      tokenizer_root: "0".repeat(64),
    });
    const input = {
      model_root: root,
      prompt_ids: [5, 900, 17, 3000, 42, 7, 1234],
      max_tokens: 6,
      eos_id: null,
    };
    const plain = new ModelCache(store, 2, false);
    const expected = await computeAnswer(plain, input, null, null);
    const forged = await computeAnswer(plain, input, "token", [2_000_000, 2_000_000]);
    assert.equal(
      isResident((await plain.get(root)).components.block_000!["mlp.up_proj.weight"]!.data),
      false,
    );
    const resident = new ModelCache(store);
    const up = (await resident.get(root)).components.block_000!["mlp.up_proj.weight"]!.data;
    assert.equal(isResident(up), wasmMatmulAvailable());
    for (const threads of [1, 2, 3]) {
      setKernelThreads(threads);
      const a = await computeAnswer(resident, input, null, null);
      assert.deepEqual(
        { tokens: a.tokens, record_root: a.record_root, metadata: a.metadata },
        { tokens: expected.tokens, record_root: expected.record_root, metadata: expected.metadata },
        `threads ${threads}`,
      );
      const f = await computeAnswer(resident, input, "token", [2_000_000, 2_000_000]);
      assert.deepEqual([f.tokens, f.record_root, f.metadata], [
        forged.tokens,
        forged.record_root,
        forged.metadata,
      ]);
    }
  } finally {
    setKernelThreads(before);
    Deno.removeSync(dir, { recursive: true });
  }
});
