import { assertEquals } from "../_assert.ts";
import { parseJson } from "../../core/canonical.ts";

const TASK = new URL("../../tasks/account.ts", import.meta.url).pathname;

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-env", TASK, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("account new, show, sign and verify work end to end", async () => {
  const dir = await Deno.makeTempDir();
  const created = await run("new", "--home", `${dir}/alice`);
  assertEquals(created.code, 0, created.stderr);
  const id = created.stdout.trim();
  assertEquals(/^0[23][0-9a-f]{64}$/.test(id), true);
  assertEquals((await Deno.stat(`${dir}/alice/account.key`)).mode! & 0o777, 0o600);
  assertEquals((await run("show", "--home", `${dir}/alice`)).stdout.trim(), id);

  await Deno.writeTextFile(
    `${dir}/body.json`,
    JSON.stringify({ kind: "transfer", chain_id: "neuroshard-devnet", nonce: 3, to: id, amount: 7 }, null, 2),
  );
  const signed = await run("sign", "--home", `${dir}/alice`, `${dir}/body.json`);
  assertEquals(signed.code, 0, signed.stderr);
  const envelope = parseJson(signed.stdout.trim()) as Record<string, unknown>;
  assertEquals(envelope.public_key, id);
  await Deno.writeTextFile(`${dir}/env.json`, signed.stdout);
  const verified = await run("verify", `${dir}/env.json`);
  assertEquals(verified.code, 0, verified.stderr);
  const report = parseJson(verified.stdout.trim()) as Record<string, unknown>;
  assertEquals([report.ok, report.sender, report.kind, report.nonce], [true, id, "transfer", 3]);
});

Deno.test("account refuses to overwrite a key, and reports bad input with non-zero exits", async () => {
  const dir = await Deno.makeTempDir();
  await run("new", "--home", dir);
  const before = await Deno.readTextFile(`${dir}/account.key`);
  const again = await run("new", "--home", dir);
  assertEquals(again.code, 1);
  assertEquals(again.stderr.includes("key_exists"), true);
  assertEquals(await Deno.readTextFile(`${dir}/account.key`), before);

  assertEquals((await run("frobnicate")).code, 2);
  assertEquals((await run("new")).stderr.includes("--home is required"), true);
  assertEquals((await run("show", "--home", dir, "--bogus")).code, 2);

  await Deno.writeTextFile(`${dir}/float.json`, '{"kind":"transfer","chain_id":"c","nonce":0,"amount":1.5}');
  const float = await run("sign", "--home", dir, `${dir}/float.json`);
  assertEquals([float.code, float.stderr.includes("float_not_allowed")], [1, true]);

  await Deno.writeTextFile(`${dir}/nokind.json`, '{"chain_id":"c","nonce":0}');
  const nokind = await run("sign", "--home", dir, `${dir}/nokind.json`);
  assertEquals([nokind.code, nokind.stderr.includes("invalid_body")], [1, true]);

  assertEquals(nokind.stdout, ""); // nothing half-signed is printed

  const help = await run("--help");
  assertEquals([help.code, help.stdout.includes("deno task account <command>")], [0, true]);
  assertEquals((await run("sign", "--help")).code, 0);
});

Deno.test("verify rejects a tampered envelope", async () => {
  const dir = await Deno.makeTempDir();
  await run("new", "--home", dir);
  await Deno.writeTextFile(`${dir}/body.json`, '{"kind":"transfer","chain_id":"c","nonce":0,"amount":5}');
  const env = parseJson((await run("sign", "--home", dir, `${dir}/body.json`)).stdout.trim()) as {
    body: Record<string, unknown>;
  };
  env.body.amount = 6;
  await Deno.writeTextFile(`${dir}/env.json`, JSON.stringify(env));
  const out = await run("verify", `${dir}/env.json`);
  assertEquals([out.code, out.stderr.includes("invalid_signature")], [1, true]);
});
