import { equal, match } from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), { args: ["run", "--allow-all", ...args], cwd: ROOT })
    .output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

for (const name of ["provider", "infer"]) {
  Deno.test(`deno task ${name} --help prints its usage and exits 0; unknown or missing options exit 2`, async () => {
    const help = await run([`tasks/${name}.ts`, "--help"]);
    equal(help.code, 0, help.err);
    equal(help.out.startsWith(`deno task ${name} `), true, help.out);
    const bad = await run([`tasks/${name}.ts`, "--nope"]);
    equal(bad.code, 2);
    match(bad.err, /^error: .*\nRun `deno task [a-z]+ --help` for usage\.\n$/);
    const missing = await run([`tasks/${name}.ts`]);
    equal(missing.code, 2);
    match(missing.err, /^error: --(home|key) is required\n/);
  });
}

Deno.test("deno task provider refuses a forge other than token, deno task infer a provider that is not an account id", async () => {
  const forge = await run([
    "tasks/provider.ts",
    "--home",
    "/tmp/x",
    "--rpc",
    "http://127.0.0.1:1",
    "--forge",
    "optimizer",
  ]);
  equal(forge.code, 2);
  match(forge.err, /^error: --forge is optimizer, expected token\n/);
  const who = await run([
    "tasks/infer.ts",
    "--key",
    "k",
    "--rpc",
    "http://127.0.0.1:1",
    "--provider",
    "p",
    "--prompt",
    "x",
  ]);
  equal(who.code, 2);
  match(who.err, /^error: --provider is p, expected an account id \(66 hex\)\n/);
});
