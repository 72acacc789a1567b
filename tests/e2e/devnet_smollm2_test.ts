/**
 * The real model on the network, end to end (slow: NEURO_SLOW=1 and the fetched SmolLM2, else ignored with
 * the reason): `deno task devnet --model smollm2 --json` as a real process with real validators, workers,
 * sponsor, referee, Curator and Evaluator processes. Two cohorts cut by the SmolLM2 codec (the Curator
 * collecting only rows of 10 or more response targets) are voted in by more than two thirds of the 16 voting
 * power, each scheduling one step; the honest step (the first cohort's) is paid exactly 1,000,000 atoms
 * (800,000 to its three workers), the forged step is rejected for its `optimizer update` and slashed with the
 * real uploads of the pinpointed block, the growth adds exactly 14,160,384 parameters, settles, mints nothing
 * and keeps the training round, the step on the grown model (the second cohort's) is paid to four workers, the
 * Evaluator's 8 score claims settle unrefuted and the gate decides on the grown, trained model against the
 * genesis one — S, Q and G per group recomputed here from the decision's document q values, and exactly the
 * values of the deterministic run: both groups pass, so the gate promotes the grown, trained model — every
 * validator agrees on the final app hash, the grown model's logits equal its parent's bit for bit, the final
 * model answers the capital-of-France prompt with Paris (`generate`), and the same question bought through
 * paid inference from a Provider serving the promoted model settles with Paris, paid per token (the client
 * charged its fee and the tokens, the rest of its maximum refunded, the provider paid the tokens).
 * Prints the report's table.
 */
import assert from "node:assert/strict";
import { ObjectStore } from "../../core/object_store.ts";
import { forwardLogits } from "../../kernels/generation.ts";
import { loadModel } from "../../kernels/manifest.ts";
import { formatSmollm2Report, type Smollm2Report } from "../../devnet/smollm2_report.ts";
import { SLOW, smollm2File } from "../model/smollm2_file.ts";
import { SMOLLM2_FUNDING } from "../../genesis/devnet/smollm2_build.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import { FRESH_MARGIN, groupGate, RETENTION_MARGIN } from "../../workflows/gate.ts";
import pin from "../../genesis/pins/smollm2_genesis.json" with { type: "json" };

const ROOT = new URL("../../", import.meta.url).pathname;
const file = SLOW
  ? await smollm2File()
  : { path: null, reason: "set NEURO_SLOW=1 to run the SmolLM2 devnet" };

/** Links the manifest `root` (stored in the devnet's `objects/` by the scenario) and its components into `into`. */
async function gather(dir: string, root: string, into: ObjectStore): Promise<void> {
  const homes = ["objects", "worker-0/objects", "worker-1/objects", "worker-2/objects", "worker-3/objects"];
  const link = async (r: string) => {
    if (await into.has(r)) return;
    const target = into.pathOf(r);
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    for (const h of homes) {
      const path = new ObjectStore(`${dir}/${h}`).pathOf(r);
      if (await Deno.stat(path).then(() => true, () => false)) return await Deno.link(path, target);
    }
    throw new Error(`no home of ${dir} holds ${r}`);
  };
  await link(root);
  const manifest = JSON.parse(await Deno.readTextFile(into.pathOf(root))) as {
    components: Record<string, string>;
  };
  for (const r of Object.values(manifest.components)) await link(r);
}

Deno.test({
  name:
    "SmolLM2 on four validators: cohorts voted in, an honest step paid, a forged one refuted with real uploads, growth by four identity blocks, a paid step on the grown model, the gate's decision on it, Paris",
  ignore: file.path === null,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tmp = await Deno.makeTempDir({ dir: `${ROOT}.cache` });
    const dir = `${tmp}/net`;
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["task", "devnet", "--model", "smollm2", "--json", "--dir", dir, "--gguf", file.path!],
        cwd: ROOT,
        stdout: "piped",
        stderr: "inherit",
      }).output();
      assert.equal(out.code, 0, "the devnet exits 0");
      const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
      const report = JSON.parse(lines[lines.length - 1]!) as Smollm2Report;
      console.log(formatSmollm2Report(report));
      const s = report.summary;
      const [honest, forged, grown] = s.claims;
      assert.equal(s.claims.length, 3);
      assert.equal(honest!.status, "settled");
      assert.equal(forged!.status, "rejected");
      assert.match(String(forged!.reason), /^mismatch: optimizer update/);
      assert.equal(grown!.status, "settled");
      assert.equal(report.dispute!.status, "rejected");
      // The pinpointed block's parent component alone is 14,161,224 bytes (PROTOCOL §5 challenge).
      assert.ok(report.dispute!.bytes > 14_161_224, `${report.dispute!.bytes} bytes uploaded`);
      assert.equal(report.dispute!.txs, report.dispute!.uploads + report.dispute!.seals);
      // The validators replayed the stage off the block thread: blocks kept coming while they did (inline, the
      // proposer had stopped for minutes on a loaded machine).
      assert.ok(
        report.dispute!.longest_block_ms! < 60_000,
        `longest block interval ${report.dispute!.longest_block_ms} ms`,
      );
      const g = report.growth as {
        status: string;
        added_parameters: number;
        last_block_bytes: number;
        parent: string;
        model_root: string;
      };
      assert.equal(g.status, "settled");
      assert.equal(g.added_parameters, 14_160_384);
      assert.equal(g.last_block_bytes, 14_161_224);
      assert.equal(s.issued, 2_000_000, "two paid steps mint 1,000,000 atoms each; the growth mints nothing");
      assert.equal(s.training_round, 2, "the growth keeps the training round");
      assert.equal(s.validators_agree, true);
      const balance = (name: string) => s.balances.find((b) => b.name === name)!.balance;
      // 800,000 atoms to the workers of each step: 266,667 + 266,667 + 266,666, then 200,000 to each of four.
      assert.deepEqual(
        ["worker-0", "worker-1", "worker-2", "worker-3", "forger"].map(balance),
        [10_466_667, 10_466_667, 10_466_666, 10_200_000, 10_000_000],
      );
      assert.match(String(report.answer!.text), /Paris/);
      // The cohorts: two, each voted in by more than two thirds of the 16 voting power (4 validators of 4
      // bond units; which votes land before the activation block depends on timing, so not exactly).
      assert.equal(report.cohorts.length, 2);
      for (const c of report.cohorts) {
        assert.equal(c.total_power, 16);
        assert.ok(3 * c.yes_power > 2 * c.total_power, `${c.yes_power} of ${c.total_power}`);
        assert.equal(c.replay_steps, 0);
      }
      const [first, second] = report.cohorts;
      assert.ok(first!.activated_height < honest!.height && second!.activated_height < forged!.height);
      assert.ok(honest!.height < second!.activated_height);
      // The evaluation: the grown, trained model (the answer's) against the genesis serving model, 2 scores of
      // 4 windows per group all settled, the gate's integers exactly those of the documents' q values.
      const e = report.evaluation!;
      assert.equal(e.cohort, second!.data_root);
      assert.equal(e.candidate, report.answer!.model_root);
      assert.equal(e.serving_root_before, pin.model.root, "the genesis SmolLM2 served until the decision");
      assert.deepEqual([e.settled_scores, e.rejected], [8, []]);
      // Cohorts, schedule, training and scoring are deterministic, so the gate's integers are these exactly.
      // (`deno run -A devnet/smollm2_gate_check.ts GGUF 8 --cohorts --min-targets 10 --answer` gives the same.)
      const measured = {
        retention: ["-869761", "423811418327", "1029745", true],
        fresh: ["-575380", "236863050592", "567364", true],
      };
      for (const [role, margin] of [["retention", RETENTION_MARGIN], ["fresh", FRESH_MARGIN]] as const) {
        const gate = report.gate![role] as {
          S: string;
          Q: string;
          G: string;
          pass: boolean;
          n: number;
          baseline: { q: string }[];
          candidate: { q: string }[];
        };
        assert.equal(gate.n, 8);
        const q = (d: { q: string }[]) => d.map((x) => BigInt(x.q));
        const want = groupGate(q(gate.baseline), q(gate.candidate), margin);
        assert.deepEqual([gate.S, gate.Q, gate.G, gate.pass], [want.S, want.Q, want.G, want.pass], role);
        assert.deepEqual([e.groups[role]!.S, e.groups[role]!.passed], [want.S, want.pass]);
        assert.deepEqual([want.S, want.Q, want.G, want.pass], measured[role], role);
      }
      // Both groups pass: the gate promotes the grown, trained model, which the chain serves from then on.
      assert.deepEqual([e.decision, e.reason, e.serving_root_after], ["promote", "gate", e.candidate]);
      assert.equal(report.summary.serving_root, report.answer!.model_root);
      // The answer bought through paid inference: one job of the client to the provider, settled unrefuted,
      // 100 atoms a token of at most 8; the client paid one fee and the tokens, the provider got the tokens.
      const paid = report.paid!;
      assert.equal(
        report.paid_model,
        report.answer!.model_root,
        "the answer was bought from the promoted model",
      );
      assert.deepEqual([paid.provider, paid.prompt, paid.outcome, paid.refuted], [
        "provider",
        "What is the capital of France?",
        "settled",
        [],
      ]);
      assert.match(paid.answer, /Paris/);
      const P = DEVNET_PARAMS;
      assert.deepEqual([paid.paid_atoms, paid.refunded_atoms], [
        paid.tokens.length * P.price_per_token,
        (8 - paid.tokens.length) * P.price_per_token,
      ]);
      assert.equal(balance("client"), SMOLLM2_FUNDING.client - P.fee - paid.paid_atoms);
      assert.equal(balance("provider"), SMOLLM2_FUNDING.provider - P.fee + paid.paid_atoms);
      // The growth's logits: the grown model answers every position exactly as its parent.
      const store = new ObjectStore(`${tmp}/models`);
      await gather(dir, g.parent, store);
      await gather(dir, g.model_root, store);
      const ids = [1, 4093, 198, 19556, 905, 2];
      const before = forwardLogits(await loadModel(store, g.parent), ids);
      const after = forwardLogits(await loadModel(store, g.model_root), ids);
      assert.deepEqual(new Uint8Array(after.buffer), new Uint8Array(before.buffer));
    } finally {
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
    }
  },
});
