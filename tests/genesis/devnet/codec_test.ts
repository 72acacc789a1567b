import assert from "node:assert/strict";
import type { JsonObject } from "../../../core/canonical.ts";
import { ObjectStore } from "../../../core/object_store.ts";
import { buildDevnetCodec, DEVNET_CODEC_ROOT, DEVNET_VOCAB } from "../../../genesis/devnet/codec.ts";
import { DEVNET_SOURCE, devnetRow } from "../../../genesis/devnet/generator.ts";
import { makeBatch } from "../../../text/batch.ts";
import { loadCodec, TextCodec } from "../../../text/codec.ts";
import { buildWindows } from "../../../text/windows.ts";

const built = buildDevnetCodec(DEVNET_SOURCE);
const codec = TextCodec.fromParts(
  built.codec.manifest as unknown as JsonObject,
  built.codec.backend,
  built.codec.root,
);

Deno.test("the devnet tokenizer has 4,096 pieces and the ChatML special tokens", () => {
  assert.equal(built.codec.root, DEVNET_CODEC_ROOT);
  assert.equal(
    built.codec.manifest.backend,
    "c652a2415b15b7bdff8ced909ca10fb1136bb930f83bd4ac16f39d0c7cf4889f",
  );
  assert.equal(codec.manifest.vocabulary, DEVNET_VOCAB);
  assert.deepEqual(codec.manifest.special_ids, { bos: 1, eos: 2, pad: 2, unk: 0 });
  const text = codec.render(devnetRow(DEVNET_SOURCE, 0), false);
  assert.equal(codec.decode(codec.encode(text)), text);
  assert.ok(codec.encode(text).length < text.length / 2.5, "the devnet text compresses well");
});

Deno.test("the devnet codec task builds the same root in another process and stores a loadable codec", async () => {
  const dir = await Deno.makeTempDir({ prefix: "devnet-codec-" });
  try {
    const run = (extra: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-read",
          "--allow-write",
          "--allow-env",
          "tasks/devnet_codec.ts",
          "--objects",
          `${dir}/objects`,
          ...extra,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const out = await run(["--tokenizer-out", `${dir}/tokenizer.json`]);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal(new TextDecoder().decode(out.stdout).trim(), built.codec.root);
    const loaded = await loadCodec(new ObjectStore(`${dir}/objects`), built.codec.root);
    assert.equal(loaded.manifest.backend, built.codec.manifest.backend);
    const again = await run(["--tokenizer-out", `${dir}/tokenizer.json`]);
    assert.equal(again.code, 2);
    assert.match(new TextDecoder().decode(again.stderr), /the file exists/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the generator's first rows produce training windows and valid batches", () => {
  let windows = 0;
  let targets = 0;
  for (let row = 0; row < 200; row++) {
    const doc = buildWindows(codec, devnetRow(DEVNET_SOURCE, row));
    assert.ok(doc.windows.length >= 1 && doc.windows.length <= 2, `row ${row}`);
    assert.equal(doc.omitted, 0, `row ${row}`);
    const batch = makeBatch(codec.root, doc.windows, codec.manifest.vocabulary);
    assert.equal(batch.rows[0]!.tokens.length, 128);
    windows += doc.windows.length;
    targets += doc.scored;
  }
  assert.ok(windows > 250 && windows < 350, `${windows} windows`);
  assert.ok(targets > windows * 3, `${targets} targets`);
});
