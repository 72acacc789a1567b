import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { canonicalBytes } from "../../../core/canonical.ts";
import { sha256Hex } from "../../../core/digest.ts";
import { fromHexFloat } from "../../../core/hex_float.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { parseManifest } from "../../../kernels/manifest.ts";
import { componentNames } from "../../../kernels/model.ts";
import { validateBatch } from "../../../text/batch.ts";
import { TextCodec } from "../../../text/codec.ts";
import { DEVNET_CODEC_ROOT } from "../../../genesis/devnet/codec.ts";
import {
  DEVNET_BATCHES,
  DEVNET_CLIP,
  DEVNET_LEARNING_RATE,
  devnetBatches,
  devnetContents,
  kernelBatch,
} from "../../../genesis/devnet/contents.ts";

const contents = devnetContents();

Deno.test("a text batch becomes a kernel batch whose labels are the next position's target", () => {
  const k = kernelBatch({
    codec: DEVNET_CODEC_ROOT,
    rows: [{ tokens: [5, 6, 7, 8], labels: [-100, -100, 7, 8] }],
  });
  assertEquals(k, { input_ids: [[5, 6, 7, 8]], labels: [[-100, 7, 8, -100]] });
});

Deno.test("the devnet contents pin the devnet codec, a fresh devnet model and 16 codec-bound batches", () => {
  assertEquals(contents.codec.root, DEVNET_CODEC_ROOT);
  const { manifest, config } = parseManifest(contents.model.manifest as never);
  assertEquals(config, PRESETS.devnet);
  assertEquals([manifest.parent, manifest.tokenizer_root], [null, DEVNET_CODEC_ROOT]);
  assertEquals(Object.keys(manifest.components), componentNames(PRESETS.devnet));
  assertEquals(contents.model.root, sha256Hex(canonicalBytes(contents.model.manifest as never)));
  assertEquals(contents.batches.length, DEVNET_BATCHES);
  const text = devnetBatches(TextCodec.fromParts(contents.codec.manifest as never, contents.codec.backend));
  for (const [i, b] of contents.batches.entries()) {
    const t = validateBatch(text[i], DEVNET_CODEC_ROOT, 4096);
    assertEquals([b.input_ids.length, b.input_ids[0]!.length], [4, 64]);
    assertEquals(b.input_ids, t.rows.map((r) => r.tokens));
    assertEquals(b.labels, t.rows.map((r) => [...r.labels.slice(1), -100]));
  }
  assertEquals([fromHexFloat(contents.learningRate), fromHexFloat(contents.clip)], [
    DEVNET_LEARNING_RATE,
    DEVNET_CLIP,
  ]);
});

Deno.test("every object the devnet contents name is stored under the hash of its bytes", () => {
  const named = [
    contents.codec.root,
    contents.codec.manifest.backend,
    contents.model.root,
    ...Object.values(contents.model.manifest.components),
  ];
  assertEquals([...contents.objects.keys()].sort(), [...new Set(named)].sort());
  for (const [root, bytes] of contents.objects) assertEquals(sha256Hex(bytes), root);
});

Deno.test("the devnet contents are the same in every build (pinned model root and batch roots)", () => {
  const again = devnetContents();
  assertEquals(again.model.root, contents.model.root);
  assertEquals(again.model.root, "a00642e0f960be292b1fa46805f664744698eb6fef4c93dc2a9a29bbe70ac2fb");
  assertEquals(
    sha256Hex(canonicalBytes(again.batches as never)),
    "69db76ba7d535cc1f3827de8defed0c989cc49d89f257dd3a8db0cff97361dd2",
  );
});
