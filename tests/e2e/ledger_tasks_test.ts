import { equal } from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { LedgerApp } from "../../ledger/app.ts";
import { testGenesis } from "../ledger/_fixture.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), { args: ["run", "--allow-all", ...args], cwd: ROOT })
    .output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

for (const name of ["validator", "genesis", "transfer", "status"]) {
  Deno.test(`deno task ${name} --help prints its usage and exits 0; an unknown option exits 2`, async () => {
    const help = await run([`tasks/${name}.ts`, "--help"]);
    equal(help.code, 0, help.err);
    equal(help.out.startsWith(`deno task ${name}`), true, help.out);
    const bad = await run([`tasks/${name}.ts`, "--nope"]);
    equal(bad.code, 2);
    equal(bad.err.startsWith("error: "), true, bad.err);
  });
}

Deno.test("deno task validator refuses a missing genesis file with a clear error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await run(["tasks/validator.ts", "--home", dir, "--genesis", `${dir}/none.json`]);
    equal(r.code, 2);
    equal(r.err.startsWith(`error: Cannot read genesis ${dir}/none.json`), true, r.err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task validator refuses a home whose state was created with another genesis (genesis_mismatch)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    LedgerApp.open(`${dir}/state.sqlite`, testGenesis()).close();
    await Deno.writeTextFile(`${dir}/other.json`, canonical({ ...testGenesis(), chain_id: "other-chain" }));
    const r = await run(["tasks/validator.ts", "--home", dir, "--genesis", `${dir}/other.json`]);
    equal(r.code, 1);
    equal(
      /^error: Cannot start node: the state was created with genesis [0-9a-f]{64}, given [0-9a-f]{64} \(genesis_mismatch\)/
        .test(r.err),
      true,
      r.err,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
