import assert from "node:assert/strict";
import { ObjectStore } from "../../core/object_store.ts";
import { loadModel } from "../../kernels/manifest.ts";
import { loadCodec } from "../../text/codec.ts";
import { tempDir, tinyModel } from "./tiny_model_fixture.ts";
import { configJson, enc, hfFile } from "../kernels/hf_import_fixture.ts";
import { readGguf } from "../../kernels/gguf.ts";
import { tokenizerFromGguf } from "../../kernels/gguf_tokenizer.ts";
import { id, sha256Hex } from "../../core/digest.ts";
import { ROOT, SMOLLM2_PIN, smollm2File } from "./smollm2_file.ts";

async function importTask(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "tasks/model_import.ts", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

function roots(stdout: string): { model: string; codec: string } {
  const m = /^model_root ([0-9a-f]{64})\ncodec_root ([0-9a-f]{64})\n$/.exec(stdout);
  assert.ok(m, stdout);
  return { model: m[1]!, codec: m[2]! };
}

Deno.test("model:import stores a GGUF model and its codec, prints both roots, and is deterministic", async () => {
  await tempDir(async (dir) => {
    await Deno.writeFile(`${dir}/tiny.gguf`, tinyModel());
    const first = await importTask("--gguf", `${dir}/tiny.gguf`, "--objects", `${dir}/objects`);
    assert.equal(first.code, 0, first.stderr);
    const { model, codec } = roots(first.stdout);
    const store = new ObjectStore(`${dir}/objects`);
    const loaded = await loadModel(store, model);
    assert.equal(loaded.manifest.tokenizer_root, codec);
    assert.equal(loaded.manifest.parent, null);
    assert.deepEqual(Object.keys(loaded.manifest.components), ["block_000", "block_001", "embed", "norm"]);
    assert.equal((await loadCodec(store, codec)).root, codec);
    const again = await importTask("--gguf", `${dir}/tiny.gguf`, "--objects", `${dir}/other`);
    assert.deepEqual(roots(again.stdout), { model, codec });
  });
});

Deno.test("model:import refuses a missing option, a missing file and a file that is not GGUF, storing nothing", async () => {
  await tempDir(async (dir) => {
    const noSource = await importTask("--objects", `${dir}/objects`);
    assert.equal(noSource.code, 2);
    assert.match(noSource.stderr, /error: give exactly one of --gguf FILE or --hf DIR/);
    const both = await importTask("--gguf", "a", "--hf", "b", "--objects", `${dir}/objects`);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /error: give exactly one of --gguf FILE or --hf DIR/);
    const missing = await importTask("--gguf", `${dir}/none.gguf`, "--objects", `${dir}/objects`);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /error: Cannot import model: cannot read .*none\.gguf/);
    await Deno.writeTextFile(`${dir}/bad.gguf`, "GGML is not GGUF");
    const bad = await importTask("--gguf", `${dir}/bad.gguf`, "--objects", `${dir}/objects`);
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /error: Cannot read GGUF: magic is 0x4c4d4747, expected 0x46554747 \(GGUF\) \(invalid_model\)/,
    );
    assert.equal(await Deno.stat(`${dir}/objects`).then(() => true, () => false), false);
  });
});

/** A Hugging Face folder holding the tiny model with the tokenizer the GGUF import rebuilds. */
async function tinyHfFolder(dir: string): Promise<void> {
  const t = tokenizerFromGguf(readGguf(tinyModel()));
  await Deno.mkdir(dir);
  await Deno.writeFile(`${dir}/config.json`, configJson());
  await Deno.writeFile(`${dir}/model.safetensors`, hfFile());
  await Deno.writeFile(`${dir}/tokenizer.json`, enc(t.tokenizer));
  await Deno.writeFile(
    `${dir}/tokenizer_config.json`,
    enc({
      chat_template: t.chatTemplate,
      bos_token: t.special.bos,
      eos_token: t.special.eos,
      pad_token: t.special.pad,
      unk_token: t.special.unk,
    }),
  );
}

Deno.test("model:import --hf gives the same components and codec as the GGUF of the same model", async () => {
  await tempDir(async (dir) => {
    await Deno.writeFile(`${dir}/tiny.gguf`, tinyModel());
    await tinyHfFolder(`${dir}/hf`);
    const fromGguf = roots(
      (await importTask("--gguf", `${dir}/tiny.gguf`, "--objects", `${dir}/objects`)).stdout,
    );
    const r = await importTask("--hf", `${dir}/hf`, "--objects", `${dir}/objects`);
    assert.equal(r.code, 0, r.stderr);
    const fromHf = roots(r.stdout);
    assert.equal(fromHf.codec, fromGguf.codec);
    const store = new ObjectStore(`${dir}/objects`);
    const a = await loadModel(store, fromGguf.model);
    const b = await loadModel(store, fromHf.model);
    assert.deepEqual(b.manifest.components, a.manifest.components);
    assert.deepEqual(b.manifest.config, a.manifest.config);
    assert.equal((b.manifest.origin as { format: string }).format, "hf");
  });
});

Deno.test("model:import --hf checks pinned SHA-256 values and stores nothing when one differs", async () => {
  await tempDir(async (dir) => {
    await tinyHfFolder(`${dir}/hf`);
    const config = await Deno.readFile(`${dir}/hf/config.json`);
    await Deno.writeTextFile(`${dir}/good.json`, JSON.stringify({ "config.json": sha256Hex(config) }));
    await Deno.writeTextFile(`${dir}/bad.json`, JSON.stringify({ "config.json": "0".repeat(64) }));
    const bad = await importTask(
      "--hf",
      `${dir}/hf`,
      "--pins",
      `${dir}/bad.json`,
      "--objects",
      `${dir}/objects`,
    );
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      new RegExp(
        `error: Cannot import Hugging Face model: config.json has SHA-256 ${
          sha256Hex(config)
        }, pinned 0{64} \\(invalid_model\\)`,
      ),
    );
    assert.equal(await Deno.stat(`${dir}/objects`).then(() => true, () => false), false);
    const good = await importTask(
      "--hf",
      `${dir}/hf`,
      "--pins",
      `${dir}/good.json`,
      "--objects",
      `${dir}/objects`,
    );
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stderr, /1 pinned SHA-256 values match/);
  });
});

const file = await smollm2File();

Deno.test({
  name: "model:import imports SmolLM2 with 134,515,008 parameters in 32 components",
  ignore: file.path === null,
  fn: async () => {
    await tempDir(async (dir) => {
      const r = await importTask("--gguf", file.path!, "--objects", dir);
      assert.equal(r.code, 0, r.stderr);
      const { model, codec } = roots(r.stdout);
      const loaded = await loadModel(new ObjectStore(dir), model);
      assert.equal(loaded.manifest.parameters, SMOLLM2_PIN.parameters);
      assert.equal(Object.keys(loaded.manifest.components).length, 32);
      assert.deepEqual(loaded.manifest.origin, {
        file: SMOLLM2_PIN.gguf_file,
        format: "gguf",
        sha256: SMOLLM2_PIN.gguf_sha256,
      });
      assert.equal(id(loaded.manifest.components), SMOLLM2_PIN.components_id);
      const c = await loadCodec(new ObjectStore(dir), codec);
      assert.equal(c.manifest.vocabulary, 49152);
      console.log(`SmolLM2 model_root ${model} codec_root ${codec}`);
    });
  },
});
