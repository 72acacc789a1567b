import assert from "node:assert/strict";

const ROOT = new URL("../../../", import.meta.url).pathname;

async function task(name: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}tasks/${name}.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

for (const name of ["worker", "sponsor", "referee"]) {
  Deno.test(`deno task ${name} --help prints its usage and exits 0`, async () => {
    const r = await task(name, ["--help"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, new RegExp(`^deno task ${name} --home DIR`));
  });
  Deno.test(`deno task ${name} without --home is a usage error (exit 2)`, async () => {
    const r = await task(name, []);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, `error: --home is required\nRun \`deno task ${name} --help\` for usage.\n`);
  });
}

Deno.test("deno task worker --forge with an unknown mode is a usage error naming the modes", async () => {
  const home = Deno.makeTempDirSync({ prefix: "worker-cli-" });
  try {
    const r = await task("worker", ["--home", home, "--forge", "loss"]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^error: Cannot forge: mode is loss, expected one of optimizer, forward, backward, score, chunks\n/,
    );
    assert.deepEqual([...Deno.readDirSync(home)], []);
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("deno task sponsor with a workers file that is not a list of workers fails naming the file", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "sponsor-cli-" });
  try {
    await Deno.writeTextFile(`${dir}/workers.json`, JSON.stringify([{ url: "ftp://x", token: "ab" }]));
    const r = await task("sponsor", [
      "--home",
      `${dir}/home`,
      "--rpc",
      "http://127.0.0.1:9",
      "--workers",
      `${dir}/workers.json`,
    ]);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `error: Cannot read workers file ${dir}/workers.json: entry 0 has no http url (bad_request)\n`,
    );
    await assert.rejects(Deno.stat(`${dir}/home`), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a worker prints its account and a parseable listening line, and its home keys are 0600", async () => {
  const home = Deno.makeTempDirSync({ prefix: "worker-cli-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}tasks/worker.ts`, "--home", home, "--port", "0"],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!/listening .*\n/.test(text)) text += (await reader.read()).value ?? "";
    reader.releaseLock();
    assert.match(text, /^account (0[23][0-9a-f]{64})\nlistening http:\/\/127\.0\.0\.1:\d+\n$/);
    for (const f of ["account.key", "token"]) {
      assert.equal((Deno.statSync(`${home}/${f}`).mode ?? 0) & 0o777, 0o600);
    }
    const url = /listening (\S+)/.exec(text)![1]!;
    const res = await fetch(`${url}/status`);
    assert.equal(res.status, 401);
    await res.body?.cancel();
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await child.stdout.cancel().catch(() => {});
    Deno.removeSync(home, { recursive: true });
  }
});
