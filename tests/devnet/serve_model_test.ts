import { deepStrictEqual as assertEquals, rejects } from "node:assert/strict";
import { canonicalBytes, type JsonValue } from "../../core/canonical.ts";
import { id } from "../../core/digest.ts";
import { ObjectStore } from "../../core/object_store.ts";
import type { ChainClient } from "../../actors/common/chain.ts";
import type { Manifest } from "../../kernels/manifest.ts";
import { provideServingModel } from "../../devnet/serve_model.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

Deno.test("the serving model's manifest and components are copied from the homes that hold them; a missing one is object_not_found", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const embed = bytes("embed component"), block = bytes("block component");
    const manifest = {
      format: "neuroshard-model-1",
      config: {},
      components: {},
      parameters: 1,
      parent: null,
      origin: null,
      tokenizer_root: "0".repeat(64),
    } as unknown as Manifest;
    const w0 = new ObjectStore(`${tmp}/w0/objects`), w1 = new ObjectStore(`${tmp}/w1/objects`);
    const embedRoot = await w0.put(embed);
    const blockRoot = await w1.put(block);
    const m = { ...manifest, components: { embed: embedRoot, block_000: blockRoot } };
    const root = id(m as unknown as JsonValue);
    const chain = {
      manifest: (r: string) => Promise.resolve(r === root ? m : null),
    } as unknown as ChainClient;
    assertEquals(await provideServingModel(chain, root, `${tmp}/p`, [`${tmp}/w0`, `${tmp}/w1`]), 3);
    const p = new ObjectStore(`${tmp}/p/objects`);
    assertEquals(await p.get(root), canonicalBytes(m as unknown as JsonValue));
    assertEquals([await p.get(embedRoot), await p.get(blockRoot)], [embed, block]);
    // A second call has nothing to copy.
    assertEquals(await provideServingModel(chain, root, `${tmp}/p`, [`${tmp}/w0`, `${tmp}/w1`]), 0);
    await rejects(
      provideServingModel(chain, root, `${tmp}/q`, [`${tmp}/w0`]),
      (e: Error & { code?: string }) =>
        e.code === "object_not_found" && /component block_000/.test(e.message),
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
