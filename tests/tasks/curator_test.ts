/** `deno task curator`: every command has --help; usage mistakes exit 2 with one error line and a hint. */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;

async function curator(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "--allow-net=127.0.0.1",
      "tasks/curator.ts",
      ...args,
    ],
    cwd: ROOT,
  }).output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

Deno.test("deno task curator and each of its commands print their usage with --help", async () => {
  const top = await curator(["--help"]);
  assert.equal(top.code, 0);
  assert.ok(
    top.out.startsWith("deno task curator <collect|propose|review|status> --home DIR --rpc URL"),
    top.out,
  );
  for (const command of ["collect", "propose", "review", "status"]) {
    const r = await curator([command, "--help"]);
    assert.equal(r.code, 0, command);
    assert.ok(r.out.startsWith(`deno task curator ${command} --home DIR`), r.out);
  }
});

Deno.test("curator usage mistakes exit 2 with one error line naming the mistake", async () => {
  const p = "ab".repeat(32);
  const cases: [string[], string][] = [
    [["frobnicate"], "error: unknown command frobnicate"],
    [["collect"], "error: --home is required"],
    [["collect", "--home", "/tmp/x"], "error: --rpc is required"],
    [
      ["collect", "--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--rows", "0"],
      "error: --rows is 0, expected an integer from 1 to 4096",
    ],
    [
      ["collect", "--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--train", "3"],
      "error: --train is not an option of collect",
    ],
    [["review", "--home", "/tmp/x", "--rpc", "http://127.0.0.1:1"], "error: --proposal is required"],
    [
      ["review", "--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--proposal", p.toUpperCase()],
      `error: --proposal is ${p.toUpperCase()}, expected 64 lowercase hex`,
    ],
    [
      ["propose", "--home", "/tmp/x", "--rpc", "http://127.0.0.1:1", "--train", "129"],
      "error: --train is 129, expected an integer from 1 to 128",
    ],
    [["status", "--home", "/tmp/x", "--bogus"], "error: Unknown option '--bogus'"],
  ];
  for (const [args, first] of cases) {
    const r = await curator(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.err}`);
    const lines = r.err.trim().split("\n");
    assert.ok(lines[0]!.startsWith(first), `${args.join(" ")}: ${r.err}`);
    assert.equal(lines[1], "Run `deno task curator --help` for usage.");
  }
});

Deno.test("a missing sources file is an error of exit 1 with its code, and nothing is created", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const r = await curator(["status", "--home", `${dir}/home`]);
    assert.equal(r.code, 1);
    assert.equal(
      r.err.trim(),
      `error: Cannot read sources file ${dir}/home/sources.json: it does not exist (not_found)`,
    );
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
