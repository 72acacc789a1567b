/**
 * The SmolLM2 devnet's genesis from the fetched file (slow; ignored with the reason without it): the contents
 * computed from the GGUF are exactly the pinned ones (`genesis/pins/smollm2_genesis.json`), the model root is
 * the one `model:import` stores, and the build stores the model once, hard-linked into the homes that compute
 * or check stages, with none in the validators' homes.
 */
import assert from "node:assert/strict";
import { ObjectStore } from "../../core/object_store.ts";
import { checkPinned, ensureSmollm2Devnet } from "../../genesis/devnet/smollm2_build.ts";
import { smollm2Contents } from "../../genesis/devnet/smollm2_contents.ts";
import { storeModel } from "../../kernels/manifest.ts";
import { modelFromGguf } from "../../kernels/gguf_model.ts";
import { readGguf } from "../../kernels/gguf.ts";
import pin from "../../genesis/pins/smollm2_genesis.json" with { type: "json" };
import { smollm2File } from "./smollm2_file.ts";

const file = await smollm2File();

Deno.test({
  name:
    "the SmolLM2 genesis contents computed from the fetched GGUF are the pinned ones, model root as model:import stores it",
  ignore: file.path === null,
  fn: async () => {
    const bytes = await Deno.readFile(file.path!);
    const contents = smollm2Contents(bytes, "SmolLM2-135M-Instruct.Q4_1.gguf");
    checkPinned(contents);
    assert.equal(contents.model.root, pin.model.root);
    assert.equal(contents.codec.root, pin.codec.root);
    const targets = contents.batches[0]!.labels.flat().filter((l) => l !== -100).length;
    assert.ok(targets > 0, `${targets} targets`);
    const dir = await Deno.makeTempDir();
    try {
      const { sha256Hex } = await import("../../core/digest.ts");
      const { root } = await storeModel(new ObjectStore(dir), modelFromGguf(readGguf(bytes)), {
        origin: { format: "gguf", file: "SmolLM2-135M-Instruct.Q4_1.gguf", sha256: sha256Hex(bytes) },
        tokenizer_root: contents.codec.root,
      });
      assert.equal(root, contents.model.root);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "the SmolLM2 devnet build stores the model once, hard-linked into workers, forger and referee, none for validators",
  ignore: file.path === null,
  fn: async () => {
    const tmp = await Deno.makeTempDir();
    try {
      const layout = await ensureSmollm2Devnet({ dir: `${tmp}/net`, gguf: file.path! });
      const embed = pin.model.manifest.components.embed;
      const shared = new ObjectStore(layout.objects).pathOf(embed);
      const ino = (await Deno.stat(shared)).ino;
      for (const home of [...layout.workers, layout.forger, layout.referee]) {
        assert.equal((await Deno.stat(new ObjectStore(`${home}/objects`).pathOf(embed))).ino, ino, home);
      }
      assert.equal(layout.workers.length, 4);
      for (const v of layout.validators) {
        assert.equal(await new ObjectStore(`${v}/objects`).has(embed), false, v);
      }
      assert.equal((await Deno.stat(`${layout.sponsor}/account.key`)).mode! & 0o777, 0o600);
      const again = await ensureSmollm2Devnet({ dir: `${tmp}/net`, gguf: "/nonexistent.gguf" });
      assert.equal(again.built, false);
      assert.equal(again.genesisId, layout.genesisId);
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
