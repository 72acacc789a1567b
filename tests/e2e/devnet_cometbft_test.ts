/**
 * `deno task devnet --engine cometbft` (NEURO_SLOW=1 only; ignored with the reason printed when CometBFT is not
 * installed): the same scenario on four CometBFT validators trains, catches the forger, evaluates and pays, and a devnet
 * SIGKILLed in the forged step resumes (every validator rejoining through the ABCI handshake) to the same
 * state, all four app hashes agreeing.
 */
import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { installedTool } from "../../ledger/abci/cometbft_pin.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import type { DevnetSummary } from "../../devnet/summary.ts";
import { devnetContents } from "../../genesis/devnet/contents.ts";
import { devnetSchedule, honestRun, killLeftovers, liveChildren, runDevnet } from "./_devnet.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const cometbft = await installedTool(ROOT, "cometbft");
const SLOW = Deno.env.get("NEURO_SLOW") === "1";
if (!cometbft) {
  console.log("devnet on CometBFT ignored: cometbft is not installed (deno task cometbft:install)");
} else if (!SLOW) console.log("devnet on CometBFT ignored: it runs with NEURO_SLOW=1 (deno task test:slow)");

function check(
  s: DevnetSummary,
  steps: number,
  schedule: Awaited<ReturnType<typeof devnetSchedule>>,
  stderr: string[],
): void {
  const settled = steps;
  assertEquals([s.validators_agree, s.conserved], [true, true]);
  equal(stderr.some((l) => /^all 4 cometbft validators agree/.test(l)) || s.validators_agree, true);
  const honest = honestRun(settled, schedule);
  const e1 = s.epochs[0]!;
  // The evaluation decided: a promotion serves the trained model; a failure keeps the genesis model.
  const promoted = e1.evaluation?.decision === "promote";
  assertEquals([
    e1.steps.filter((c) => c.outcome === "settled").length,
    e1.serving_root_after,
    s.issued_atoms,
  ], [
    settled,
    promoted ? honest.root : devnetContents().model.root,
    settled * DEVNET_PARAMS.reward,
  ]);
  assertEquals(s.rejected.filter((r) => r.kind !== "response").map((r) => r.reason), [
    "mismatch: optimizer update",
    "mismatch: window loss",
  ]);
}

Deno.test({
  name:
    "devnet --engine cometbft trains, rejects the forged step and pays on four CometBFT validators; SIGKILLed mid-run it resumes to the same state",
  ignore: !cometbft || !SLOW,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "devnet-comet-" });
    const dir = `${tmp}/devnet`;
    try {
      const first = await runDevnet(dir, ["--engine", "cometbft", "--epochs", "1", "--steps", "1"], {
        killAt: /^\[forge\] step 1 forward/,
        timeoutMs: 900_000,
      });
      equal(first.killed, true, first.stderr.slice(-30).join("\n"));
      const end = Date.now() + 20_000;
      while ((await liveChildren(dir)) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      const resumed = await runDevnet(dir, ["--engine", "cometbft", "--epochs", "1", "--steps", "1"], {
        timeoutMs: 900_000,
      });
      equal(resumed.code, 0, resumed.stderr.slice(-30).join("\n"));
      check(resumed.summary!, 1, await devnetSchedule(), resumed.stderr);
      equal(resumed.stderr.some((l) => l.includes("cometbft homes reused")), true);
      equal(await liveChildren(dir), 0);
    } finally {
      await killLeftovers(dir);
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
