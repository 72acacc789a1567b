import assert from "node:assert/strict";
import { ObjectStore } from "../../core/object_store.ts";
import { storeCodec } from "../../text/codec.ts";
import { fixtureCodec } from "./_fixture.ts";

async function inspect(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", "tasks/codec_inspect.ts", ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

Deno.test("codec:inspect prints a verified codec and rejects a missing or malformed root", async () => {
  const dir = await Deno.makeTempDir({ prefix: "codec-inspect-" });
  try {
    const built = fixtureCodec();
    await storeCodec(new ObjectStore(`${dir}/objects`), built);
    const ok = await inspect(["--codec", built.root, "--objects", `${dir}/objects`]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`^codec        ${built.root} \\(verified\\)$`, "m"));
    const lines = ok.stdout.split("\n");
    assert.ok(lines.includes("vocabulary   300"));
    assert.ok(lines.includes('eos          "<|im_end|>" = 2'));
    assert.ok(lines.includes("runtime      @huggingface/tokenizers@0.2.0, nunjucks@3.2.4"));
    const missing = await inspect(["--codec", "cd".repeat(32), "--objects", `${dir}/objects`]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /\(object_not_found\)/);
    const bad = await inspect(["--codec", "XYZ", "--objects", `${dir}/objects`]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /\(invalid_hex\)/);
    const usage = await inspect(["--objects", `${dir}/objects`]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--codec is required/);
    const help = await inspect(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /deno task codec:inspect --codec ROOT --objects DIR/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
