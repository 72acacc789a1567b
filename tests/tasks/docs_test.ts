import assert from "node:assert/strict";

const TASK = new URL("../../tasks/docs.ts", import.meta.url).pathname;

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", TASK, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("deno task docs writes every page, --check then passes, and a stale page fails --check", async () => {
  const root = await Deno.makeTempDir({ prefix: "docs_task_" });
  try {
    const missing = await run("--check", "--root", root);
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /missing {2}docs\/workflows\/training\.md/);
    assert.match(missing.stderr, /^error: 9 diagram page\(s\) are stale; run `deno task docs`/);
    await assert.rejects(Deno.stat(`${root}/docs/workflows/training.md`));

    const wrote = await run("--root", root);
    assert.equal(wrote.code, 0, wrote.stderr);
    assert.match(wrote.stdout, /wrote {4}docs\/workflows\/epoch\.md/);
    assert.match(wrote.stdout, /wrote {4}docs\/workflows\/README\.md/);
    assert.equal((await run("--check", "--root", root)).code, 0);

    await Deno.writeTextFile(`${root}/docs/workflows/cohort.md`, "old\n");
    const stale = await run("--check", "--root", root);
    assert.equal(stale.code, 1);
    assert.match(stale.stdout, /stale {4}docs\/workflows\/cohort\.md/);
    assert.match(stale.stderr, /1 diagram page\(s\) are stale/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("deno task docs prints help, and refuses unknown options with exit 2", async () => {
  const help = await run("--help");
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^deno task docs \[--check\] \[--root DIR\]/);
  const bad = await run("--frobnicate");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^error: .*frobnicate.*\nRun `deno task docs --help` for usage\./);
  const extra = await run("extra");
  assert.equal(extra.code, 2);
  assert.match(extra.stderr, /unexpected argument extra/);
});
