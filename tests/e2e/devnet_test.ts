import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../workflows/params.ts";
import { DEVNET_FUNDING } from "../../genesis/devnet_builder.ts";
import { devnetContents } from "../../genesis/devnet/contents.ts";
import type { DevnetSummary } from "../../genesis/devnet/summary.ts";
import { devnetSchedule, honestRun, killLeftovers, liveChildren, runDevnet } from "./_devnet.ts";
import { id } from "../../core/digest.ts";

const SLOW = Deno.env.get("NEURO_SLOW") !== "1";

async function until(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`still not true after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const P = DEVNET_PARAMS;
const GENESIS_ROOT = devnetContents().model.root;
/** The first cohort's schedule, computed in-process from the pinned source files. */
const SCHEDULE = await devnetSchedule();

/**
 * What a finished scenario of `steps` honest steps, one forged step and 2 more honest steps must show: the
 * losses of an in-process run, the forged claim rejected for its optimizer update, the exact balances of the
 * workers, the sponsor and the referee, the reward issued, and every validator on the same app hash.
 */
function checkScenario(s: DevnetSummary, steps: number, referee_txs: number): void {
  const settled = steps + 2;
  const honest = honestRun(settled, SCHEDULE);
  assertEquals(s.validators_agree, true, JSON.stringify(s.app_hashes));
  assertEquals([s.training_round, s.settled, s.learning_root, s.serving_root], [
    settled,
    settled,
    honest.root,
    GENESIS_ROOT,
  ]);
  const expected = [
    ...honest.losses.slice(0, steps).map((loss) => ({ loss, status: "settled" })),
    { loss: honest.losses[steps]!, status: "rejected" },
    ...honest.losses.slice(steps).map((loss) => ({ loss, status: "settled" })),
  ];
  assertEquals(s.claims.map((c) => ({ loss: c.loss, status: c.status })), expected);
  assertEquals(s.rejected.map((r) => r.reason), ["mismatch: optimizer update"]);
  assertEquals(s.issued, settled * P.reward);
  const balance = Object.fromEntries(s.balances.map((b) => [b.name, b.balance]));
  const share = Math.floor((P.reward * (1 - P.verifier_share_bps / 10_000)) / 3);
  const extra = (P.reward * (1 - P.verifier_share_bps / 10_000)) % 3;
  assertEquals(
    [balance["worker-0"], balance["worker-1"], balance["worker-2"], balance.forger],
    [0, 1, 2].map((i) => DEVNET_FUNDING.worker + settled * (share + (i < extra ? 1 : 0))).concat([
      DEVNET_FUNDING.worker,
    ]),
  );
  // The sponsor paid a reserve and a claim per attempt and lost its whole claim bond to the slash; the
  // referee paid its challenge, upload, seal and resolve fees and got its bond back plus half the claim bond.
  assertEquals(balance.sponsor, DEVNET_FUNDING.sponsor - 2 * (settled + 1) * P.fee - P.claim_bond);
  assertEquals(
    balance.referee,
    DEVNET_FUNDING.referee - referee_txs * P.fee + P.claim_bond / 2 + P.provider_bond / 2,
  );
  // Paid inference: two answers from the provider, one from the forging provider whose first response the
  // referee got refuted (its bond slashed) and whose honest retry settled; nothing minted for any of them.
  assertEquals(s.inference.map((a) => [a.provider, a.status, a.responses]), [
    ["provider", "settled", 1],
    ["provider", "settled", 1],
    ["provider-forger", "settled", 2],
  ]);
  for (const a of s.inference) {
    assertEquals([a.paid, a.refunded], [
      a.tokens.length * P.price_per_token,
      (8 - a.tokens.length) * P.price_per_token,
    ]);
  }
  const pay = s.inference.map((a) => a.paid);
  assertEquals(balance.provider, DEVNET_FUNDING.provider - 2 * P.fee + pay[0]! + pay[1]!);
  assertEquals(balance["provider-forger"], DEVNET_FUNDING.provider - 2 * P.fee - P.provider_bond + pay[2]!);
  assertEquals(balance.client, DEVNET_FUNDING.client - 3 * P.fee - pay[0]! - pay[1]! - pay[2]!);
  const validators = [0, 1, 2, 3].map((i) => balance[`validator-${i}`]!);
  equal(validators.every((b) => b > 10 * ATOMS_PER_NEURO), true, String(validators));
  // Trained only on the cohort the validators voted in: at least 3 of 4 reviewed and approved it, its
  // documents are 32 + 32 + 128, every claim's batch is the scheduled one of its step, and the curator got
  // its proposal bond back (it paid one fee).
  const c = s.cohort!;
  equal(c.voters.length >= 3, true, String(c.voters));
  assertEquals([c.documents, c.steps, c.position], [{ retention: 32, fresh: 32, train: 128 }, 64, settled]);
  equal(s.trained_on_admitted, true);
  const rejectedAt = steps;
  assertEquals(
    s.claims.map((claim) => claim.batch),
    s.claims.map((_, i) => id(SCHEDULE[i <= rejectedAt ? i : i - 1]! as never)),
  );
  assertEquals(balance.curator, DEVNET_FUNDING.curator - P.fee);
}

Deno.test("deno task devnet --steps 3 trains 3 honest steps, gets a forged optimizer update rejected with the slash, trains 2 more and every validator agrees", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "devnet-e2e-" });
  try {
    const run = await runDevnet(`${tmp}/devnet`, ["--steps", "3"], { viaTask: true });
    equal(run.code, 0, run.stderr.slice(-30).join("\n"));
    // stage 1 holds two blocks: its two components, its input activation and its incoming gradient are
    // uploaded (one chunk each) and sealed, then challenge and resolve: 10 referee transactions; the forged
    // answer's head needs the embedding (3 chunks), the final norm and the final hidden state: 10 more.
    checkScenario(run.summary!, 3, 20);
    equal(run.stderr.some((l) => /^\[forge\] step 4 claim height=\d+ loss=\d+\.\d{4}$/.test(l)), true);
    equal(run.stderr.some((l) => /referee challenge .* stage 1: fraud \(optimizer update\)/.test(l)), true);
    equal(await liveChildren(`${tmp}/devnet`), 0);
    const again = await runDevnet(`${tmp}/devnet`, []);
    equal(again.code, 0, again.stderr.slice(-30).join("\n"));
    assertEquals({ ...again.summary!, height: 0, app_hash: "", app_hashes: [] }, {
      ...run.summary!,
      height: 0,
      app_hash: "",
      app_hashes: [],
    });
  } finally {
    await killLeftovers(`${tmp}/devnet`);
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test({
  name:
    "a devnet SIGKILLed in the forged step resumes from the journals and ends in the state of an uninterrupted run",
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "devnet-kill-" });
    const dir = `${tmp}/devnet`;
    try {
      const first = await runDevnet(dir, ["--steps", "1"], { killAt: /^\[forge\] step 2 forward/ });
      equal(first.killed, true, first.stderr.slice(-30).join("\n"));
      await until(async () => (await liveChildren(dir)) === 0); // the watchdog ends what the SIGKILLed devnet started
      const resumed = await runDevnet(dir, ["--steps", "1"]);
      equal(resumed.code, 0, resumed.stderr.slice(-30).join("\n"));
      equal(await liveChildren(dir), 0);
      checkScenario(resumed.summary!, 1, 20);
    } finally {
      await killLeftovers(dir);
      await Deno.remove(tmp, { recursive: true });
    }
  },
});

Deno.test({
  name: "the full devnet scenario (5 honest steps, the forge, 2 more) survives a SIGKILL in every phase",
  ignore: SLOW,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "devnet-slow-" });
    const dir = `${tmp}/devnet`;
    try {
      for (
        const at of [
          /^\[honest\] step 3 claim/,
          /^\[forge\] step 6 update/,
          /referee challenge/,
          /^\[after\] step 7 open/,
        ]
      ) {
        const r = await runDevnet(dir, [], { killAt: at });
        equal(r.killed, true, `${at}: ${r.stderr.slice(-30).join("\n")}`);
      }
      const last = await runDevnet(dir, []);
      equal(last.code, 0, last.stderr.slice(-30).join("\n"));
      checkScenario(last.summary!, 5, 20);
      equal(await liveChildren(dir), 0);
    } finally {
      await killLeftovers(dir);
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
