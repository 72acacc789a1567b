/**
 * No task stops at a permission prompt: every `deno run` task of `deno.json` runs `--help`, and the tasks
 * below one representative invocation, through `deno task` with `DENO_NO_PROMPT=1` (a missing permission is
 * then an error, which this test looks for) and `--help` also on a pseudo-terminal with no input (where Deno
 * would print its prompt, which this test looks for).
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url).pathname;
const tasks =
  (JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)) as { tasks: Record<string, string> }).tasks;
const runTasks = Object.entries(tasks).filter(([, c]) => /^deno run /.test(c)).map(([n]) => n);
const PERMISSION_ERROR = /NotCapable|Requires \w+ access|requests \w+ access|PermissionDenied/;

/** Runs `f` over `items`, four at a time. */
async function fourAtATime<T>(items: readonly T[], f: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await f(items[next++]!);
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
}

async function runTask(name: string, args: string[]): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", name, ...args],
    cwd: ROOT,
    env: { DENO_NO_PROMPT: "1", NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

Deno.test("every task answers --help under DENO_NO_PROMPT=1 without a permission error", async () => {
  const failed: string[] = [];
  for (const name of runTasks) {
    const r = await runTask(name, ["--help"]);
    if (r.code !== 0 || PERMISSION_ERROR.test(r.text)) {
      failed.push(`${name} (exit ${r.code}): ${r.text.slice(0, 300)}`);
    }
  }
  assertEquals(failed, []);
});

Deno.test("on a terminal, no task's --help stops at a permission prompt", async (t) => {
  const script = await new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" })
    .output()
    .catch(() => null);
  if (!script?.success) {
    t.step({
      name: "ignored: util-linux `script` (a pseudo-terminal) is not installed",
      ignore: true,
      fn() {},
    });
    return;
  }
  const failed: string[] = [];
  await fourAtATime(runTasks, async (name) => {
    const out = await new Deno.Command("script", {
      args: ["-qec", `${Deno.execPath()} task -q ${name} --help`, "/dev/null"],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    if (PERMISSION_ERROR.test(text)) failed.push(`${name}: ${text.slice(0, 300)}`);
  });
  assertEquals(failed, []);
});

Deno.test("one representative invocation of each tool and client task meets no permission error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const zeros = "0".repeat(64);
    const cases: [string, string[]][] = [
      ["account", ["new", "--home", `${dir}/a`]],
      ["account", ["show", "--home", `${dir}/a`]],
      ["status", ["--rpc", "http://127.0.0.1:9"]],
      ["transfer", [
        "--key",
        `${dir}/a/account.key`,
        "--to",
        zeros,
        "--amount",
        "1",
        "--rpc",
        "http://127.0.0.1:9",
      ]],
      ["chat", ["--model", zeros, "--objects", `${dir}/objects`]],
      ["generate", ["--model", zeros, "--objects", `${dir}/objects`, "--prompt", "hi"]],
      ["codec:inspect", ["--codec", zeros, "--objects", `${dir}/objects`]],
      ["validator", ["--home", `${dir}/v`, "--genesis", `${dir}/missing.json`]],
      ["journal", ["--journal", `${dir}/none.sqlite`]],
      ["replay", ["--journal", `${dir}/none.sqlite`]],
      ["docs", ["--check"]],
      ["kernels:vectors", ["--check"]],
    ];
    const failed: string[] = [];
    // account new must come before account show and transfer, which read its key.
    await runTask(cases[0]![0], cases[0]![1]);
    await fourAtATime(cases, async ([name, args]) => {
      const r = await runTask(name, args);
      if (PERMISSION_ERROR.test(r.text)) failed.push(`${name} ${args.join(" ")}: ${r.text.slice(0, 300)}`);
    });
    assertEquals(failed, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
