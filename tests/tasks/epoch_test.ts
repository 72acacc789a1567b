/**
 * `deno task epoch` as a user meets it before any network: help for each command, usage mistakes (exit 2),
 * a refused config file (exit 1, `invalid_config`), and status/history of homes without epochs.
 */
import assert from "node:assert/strict";
import { Journal } from "../../actors/runtime/journal.ts";
import { tempDir } from "../actors/runtime/_temp.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function epoch(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const o = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "epoch", ...args],
    cwd: ROOT,
    env: { DENO_NO_PROMPT: "1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: o.code, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) };
}

Deno.test("deno task epoch prints the help of each command", async () => {
  for (
    const [args, first] of [
      [["--help"], "deno task epoch [run] --home DIR --rpc URL --config FILE [--json]"],
      [["run", "--help"], "deno task epoch [run] --home DIR --rpc URL --config FILE [--json]"],
      [["status", "--help"], "deno task epoch status --home DIR [--json]"],
      [["history", "-h"], "deno task epoch history --home DIR [--json]"],
    ] as const
  ) {
    const r = await epoch([...args]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split("\n")[0], first);
  }
  assert.match((await epoch(["--help"])).stdout, /status --home DIR/);
});

Deno.test("usage mistakes exit 2 with one error line and a hint", async () => {
  const home = tempDir("epoch_cli_");
  for (
    const [args, message] of [
      [["frobnicate", "--home", home], "unknown command frobnicate"],
      [["--home", home, "--rpc", "http://127.0.0.1:1"], "--config is required"],
      [["--rpc", "http://127.0.0.1:1", "--config", "x.json"], "--home is required"],
      [["status", "--home", home, "--rpc", "http://127.0.0.1:1"], "--rpc is not an option of status"],
      [["history", "--home", home, "extra"], "unexpected argument extra"],
      [["status", "--home", home, "--bogus"], "Unknown option '--bogus'"],
    ] as const
  ) {
    const r = await epoch([...args]);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stdout, "");
    const lines = r.stderr.trim().split("\n");
    assert.ok(lines[0]!.startsWith(`error: ${message}`), r.stderr);
    assert.equal(lines[1], "Run `deno task epoch --help` for usage.");
  }
  // Nothing was created in the home by a refused command.
  assert.deepEqual([...Deno.readDirSync(home)], []);
});

Deno.test("a config file refused by its checks exits 1 naming the field, before the home is touched", async () => {
  const dir = tempDir("epoch_cli_");
  await Deno.writeTextFile(`${dir}/epoch.json`, JSON.stringify({ genesis: "g.json", attempts: 0 }));
  const r = await epoch([
    "--home",
    `${dir}/home`,
    "--rpc",
    "http://127.0.0.1:1",
    "--config",
    `${dir}/epoch.json`,
  ]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr.trim(),
    `error: Cannot read epoch config ${dir}/epoch.json: sources is missing (invalid_config)`,
  );
  assert.throws(() => Deno.statSync(`${dir}/home`), Deno.errors.NotFound);
});

Deno.test("status and history of a home without a journal, and of one without epochs", async () => {
  const dir = tempDir("epoch_cli_");
  const missing = await epoch(["status", "--home", dir]);
  assert.equal(missing.code, 1);
  assert.equal(
    missing.stderr.trim(),
    `error: Cannot open journal ${dir}/journal.sqlite: no such file (not_found)`,
  );
  Journal.open(`${dir}/journal.sqlite`).close();
  const status = await epoch(["status", "--home", dir]);
  assert.deepEqual([status.code, status.stdout], [0, "no epoch yet\n"]);
  const json = await epoch(["status", "--home", dir, "--json"]);
  assert.equal(
    json.stdout,
    '{"charges":[],"cohort":null,"decision":null,"epoch":null,"evaluation":null,"losses":[],"phase":null,"proposal":null,"running":false,"step":null}\n',
  );
  const history = await epoch(["history", "--home", dir]);
  assert.deepEqual([history.code, history.stdout], [0, "no finished epoch\n"]);
  assert.equal((await epoch(["history", "--home", dir, "--json"])).stdout, "[]\n");
});
