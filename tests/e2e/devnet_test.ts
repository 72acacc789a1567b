import { deepStrictEqual as assertEquals, equal } from "node:assert/strict";
import { ATOMS_PER_NEURO, DEVNET_PARAMS } from "../../workflows/params.ts";
import { DEVNET_FUNDING } from "../../genesis/devnet_builder.ts";
import { devnetContents } from "../../genesis/devnet/contents.ts";
import type { DevnetSummary } from "../../devnet/summary.ts";
import {
  devnetSchedule,
  type ExpectedGate,
  expectedGate,
  honestRun,
  killLeftovers,
  liveChildren,
  runDevnet,
} from "./_devnet.ts";
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
/** The referee's transactions of a scenario: the forged step's dispute, the forged score's, the forged answer's. */
const REFEREE_TXS = 28;
const GENESIS_ROOT = devnetContents().model.root;
/** The first cohort's schedule, computed in-process from the pinned source files. */
const SCHEDULE = await devnetSchedule();

/**
 * What a finished scenario of a `cohortSteps`-step cohort must show: the losses of an in-process run with the
 * forged step (tried before the last two) rejected for its optimizer update and trained again; the cohort's
 * evaluation decided by the gate exactly as an in-process scoring of every evaluation window computes it,
 * with the forged score (the candidate's first retention windows) rejected; the serving root where the decision
 * puts it; the exact balances of the workers, the sponsor, the evaluator and the referee; the reward issued;
 * and every validator on the same app hash.
 */
async function checkScenario(s: DevnetSummary, cohortSteps: number, referee_txs: number): Promise<void> {
  const after = Math.min(2, cohortSteps);
  const steps = cohortSteps - after;
  const settled = cohortSteps;
  const honest = honestRun(settled, SCHEDULE);
  const gate = await expectedGate(honest.genesis, honest.model);
  const served = gate.promoted ? honest.root : GENESIS_ROOT;
  assertEquals(s.validators_agree, true, JSON.stringify(s.app_hashes));
  assertEquals([s.training_round, s.settled, s.learning_root, s.serving_root], [
    settled,
    settled,
    served,
    served,
  ]);
  const expected = [
    ...honest.losses.slice(0, steps).map((loss) => ({ loss, status: "settled" })),
    { loss: honest.losses[steps]!, status: "rejected" },
    ...honest.losses.slice(steps).map((loss) => ({ loss, status: "settled" })),
  ];
  assertEquals(s.claims.map((c) => ({ loss: c.loss, status: c.status })), expected);
  assertEquals(s.rejected.map((r) => r.reason), ["mismatch: optimizer update"]);
  // The evaluation: 4 groups of 32 one-window documents, 8 scores each, plus the forged one.
  equal(s.evaluations.length, 1);
  const e = s.evaluations[0]!;
  const shown = (g: ExpectedGate | null) => g && { S: g.S, Q: g.Q, G: g.G, passed: g.passed };
  assertEquals(
    [e.cohort, e.reason, e.decision, shown(e.groups.retention), shown(e.groups.fresh)],
    [s.cohort!.data_root, "gate", gate.promoted ? "promote" : "keep", gate.retention, gate.fresh],
  );
  assertEquals([e.serving_root_before, e.candidate, e.serving_root_after], [
    GENESIS_ROOT,
    honest.root,
    served,
  ]);
  equal(e.settled_scores, 32);
  assertEquals(e.rejected.map((r) => [r.side, r.role, r.offset, r.reason]), [
    ["candidate", "retention", 0, "mismatch: window loss"],
  ]);
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
  // evaluator paid open, 33 scores and finish and lost the forged score's bond; the referee paid its
  // challenge, upload, seal and resolve fees and got its bond back plus half of each slashed bond.
  assertEquals(balance.sponsor, DEVNET_FUNDING.sponsor - 2 * (settled + 1) * P.fee - P.claim_bond);
  assertEquals(balance.evaluator, DEVNET_FUNDING.evaluator - (1 + 33 + 1) * P.fee - P.claim_bond);
  assertEquals(
    balance.referee,
    DEVNET_FUNDING.referee - referee_txs * P.fee + P.claim_bond / 2 + P.claim_bond / 2 + P.provider_bond / 2,
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
  assertEquals([c.documents, c.steps, c.position], [
    { retention: 32, fresh: 32, train: 128 },
    settled,
    settled,
  ]);
  equal(s.trained_on_admitted, true);
  const rejectedAt = steps;
  assertEquals(
    s.claims.map((claim) => claim.batch),
    s.claims.map((_, i) => id(SCHEDULE[i <= rejectedAt ? i : i - 1]! as never)),
  );
  assertEquals(balance.curator, DEVNET_FUNDING.curator - P.fee);
}

Deno.test("deno task devnet --steps 3 trains a 3-step cohort with a forged optimizer update rejected, evaluates it with a forged score rejected, the gate decides and every validator agrees", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "devnet-e2e-" });
  try {
    const run = await runDevnet(`${tmp}/devnet`, ["--steps", "3"], { viaTask: true });
    equal(run.code, 0, run.stderr.slice(-30).join("\n"));
    // stage 1 holds two blocks and the forger's first one is forged: that block, its input activation and the
    // gradient arriving at its output are uploaded (one chunk each) and sealed, then challenge and resolve:
    // 8 referee transactions; the forged score's head and the forged answer's head each need the embedding
    // (3 chunks), the final norm and the final hidden state: 10 more each.
    await checkScenario(run.summary!, 3, REFEREE_TXS);
    equal(run.stderr.some((l) => /^\[forge\] step 2 claim height=\d+ loss=\d+\.\d{4}$/.test(l)), true);
    equal(
      run.stderr.some((l) =>
        /referee challenge .* stage 1: fraud \(optimizer update, block 0 update\)/.test(l)
      ),
      true,
    );
    equal(run.stderr.some((l) => /^\[evaluate\] referee challenge .*: fraud \(window loss\)/.test(l)), true);
    equal(
      run.stderr.some((l) => /^\[evaluate\] decided [0-9a-f]{12}: (promoted|not promoted) \(gate\)$/.test(l)),
      true,
    );
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
    "a devnet SIGKILLed in the dispute of the forged score resumes from the journals and ends in the state of an uninterrupted run",
  // Two devnet runs with an evaluation each: the slow suite (the default suite runs one whole scenario above).
  ignore: SLOW,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "devnet-kill-" });
    const dir = `${tmp}/devnet`;
    try {
      const first = await runDevnet(dir, ["--steps", "1"], { killAt: /^\[evaluate\] referee challenge/ });
      equal(first.killed, true, first.stderr.slice(-30).join("\n"));
      await until(async () => (await liveChildren(dir)) === 0); // the watchdog ends what the SIGKILLed devnet started
      const resumed = await runDevnet(dir, ["--steps", "1"]);
      equal(resumed.code, 0, resumed.stderr.slice(-30).join("\n"));
      equal(await liveChildren(dir), 0);
      await checkScenario(resumed.summary!, 1, REFEREE_TXS);
    } finally {
      await killLeftovers(dir);
      await Deno.remove(tmp, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "the full devnet scenario (a 5-step cohort, the forged step, the evaluation) survives a SIGKILL in every phase",
  ignore: SLOW,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "devnet-slow-" });
    const dir = `${tmp}/devnet`;
    try {
      for (
        const at of [
          /^\[honest\] step 2 claim/,
          /^\[forge\] step 4 update/,
          /referee challenge/,
          /^\[after\] step 5 open/,
          /^\[evaluate\] scored/,
          /^\[evaluate\] referee challenge/,
          /^\[evaluate\] finish/,
        ]
      ) {
        const r = await runDevnet(dir, [], { killAt: at });
        equal(r.killed, true, `${at}: ${r.stderr.slice(-30).join("\n")}`);
      }
      const last = await runDevnet(dir, []);
      equal(last.code, 0, last.stderr.slice(-30).join("\n"));
      await checkScenario(last.summary!, 5, REFEREE_TXS);
      equal(await liveChildren(dir), 0);
    } finally {
      await killLeftovers(dir);
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
