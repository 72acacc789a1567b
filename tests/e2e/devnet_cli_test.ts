import { deepStrictEqual as assertEquals, equal, match } from "node:assert/strict";
import { killLeftovers, liveChildren, runDevnet, shortDevnetArgs } from "./_devnet.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

async function devnet(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "tasks/devnet.ts", ...args],
    cwd: ROOT,
  })
    .output();
  return { code: r.code, out: new TextDecoder().decode(r.stdout), err: new TextDecoder().decode(r.stderr) };
}

Deno.test("deno task devnet --help names every option; bad options exit 2 and build nothing", async () => {
  const help = await devnet(["--help"]);
  equal(help.code, 0);
  for (
    const o of [
      "--epochs N",
      "--steps N",
      "--challenge-blocks N",
      "--no-forge",
      "--reset",
      "--json",
      "--dir DIR",
    ]
  ) {
    match(help.out, new RegExp(o));
  }
  const tmp = await Deno.makeTempDir();
  try {
    for (
      const [args, message] of [
        [["--steps", "0"], "error: --steps is 0, expected an integer from 1 to 64"],
        [["--challenge-blocks", "7"], "error: --challenge-blocks is 7, expected an integer from 8 to 400"],
        [
          ["--challenge-blocks", "401"],
          "error: --challenge-blocks is 401, expected an integer from 8 to 400",
        ],
        [["--epochs", "0"], "error: --epochs is 0, expected an integer from 1 to 6"],
        [["--steps", "two"], "error: --steps is two, expected an integer from 1 to 64"],
        [["--fast"], "error: Unknown option '--fast'"],
        [["go"], "error: unexpected argument go"],
      ] as const
    ) {
      const r = await devnet([...args, "--dir", `${tmp}/devnet`]);
      assertEquals([r.code, r.err.split("\n")[0]!.slice(0, message.length)], [2, message], r.err);
    }
    assertEquals([...Deno.readDirSync(tmp)], []);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("SIGINT stops the devnet and every process it started (exit 130); --reset then starts over", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "devnet-int-" });
  const dir = `${tmp}/devnet`;
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: shortDevnetArgs(dir, "--no-forge"),
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lines: string[] = [];
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      lines.push(...buf.split("\n").slice(0, -1));
      buf = buf.split("\n").at(-1)!;
      if (lines.some((l) => /^\[honest\] step 1 (forward|head|backward|update|receipts|claim)/.test(l))) {
        break;
      }
    }
    equal(await liveChildren(dir), 9, lines.join("\n")); // 4 validators, 3 workers, referee, sponsor
    child.kill("SIGINT");
    void child.stdout.cancel().catch(() => {});
    const status = await child.status;
    await child.stderr.cancel();
    assertEquals(status.code, 130);
    equal(await liveChildren(dir), 0);
    const first = JSON.parse(Deno.readTextFileSync(`${dir}/scenario.json`));
    assertEquals([first.phase, first.steps, first.forge], ["honest", 1, false]);
    const again = await runDevnet(dir, ["--reset", "--epochs", "1", "--steps", "1", "--no-forge"]);
    equal(again.code, 0, again.stderr.slice(-20).join("\n"));
    equal(again.stderr.some((l) => l.startsWith("built the devnet")), true);
    // Built with the tests' --challenge-blocks 80 (the default is 48).
    const genesis = JSON.parse(Deno.readTextFileSync(`${dir}/genesis.json`));
    assertEquals([genesis.params.challenge_blocks, genesis.consensus.block_interval_ms], [80, 250]);
    const steps = again.summary!.epochs.flatMap((e) => e.steps);
    assertEquals([steps.map((c) => c.outcome), again.summary!.validators_agree, again.summary!.rejected], [
      ["settled"],
      true,
      [],
    ]);
    equal(await liveChildren(dir), 0);
  } finally {
    await killLeftovers(dir);
    await Deno.remove(tmp, { recursive: true });
  }
});
