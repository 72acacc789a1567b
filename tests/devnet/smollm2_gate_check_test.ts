/**
 * The SmolLM2 devnet's gate, checked in-process (slow: NEURO_SLOW=1 and the fetched SmolLM2, else ignored with
 * the reason): SmolLM2 trained as the scenario trains it (a step, a growth by four identity blocks, a step) and
 * gated against the genesis model on the first 8 usable documents of the retention and the fresh sources. The
 * kernels are deterministic, so the gate's integers are exact: both groups pass at n = 8, neither at n = 2,
 * which is why the SmolLM2 devnet's cohorts carry 8 evaluation documents (PROTOCOL §15.1). And on the windows
 * the network's two cohorts schedule (`--cohorts`), with the devnet Curator's rule of 10 response targets a
 * row, both groups of the second cohort pass and the trained, grown model still answers Paris: exactly what
 * check 1 asserts the network decides.
 */
import assert from "node:assert/strict";
import { smollm2GateCheck } from "../../devnet/smollm2_gate_check.ts";
import { SLOW, smollm2File } from "../model/smollm2_file.ts";
import { SMOLLM2_CURATOR_MIN_TARGETS } from "../../genesis/devnet/smollm2_build.ts";

const file = SLOW
  ? await smollm2File()
  : { path: null, reason: "set NEURO_SLOW=1 to run the SmolLM2 gate check" };

Deno.test({
  name: "honest SmolLM2 training passes the gate on 8 documents a group, not on 2",
  ignore: file.path === null,
  fn: async () => {
    const r = await smollm2GateCheck(file.path!, [2, 8]);
    assert.equal(r.step_losses.length, 2);
    assert.ok(r.step_losses.every((l) => Number.isFinite(l) && l > 0), `${r.step_losses}`);
    const [two, eight] = r.groups;
    const facts = (g: { S: string; Q: string; G: string; pass: boolean }) => [g.S, g.Q, g.G, g.pass];
    assert.deepEqual(facts(two!.retention), ["-54632", "2615299600", "94628", false]);
    assert.deepEqual(facts(two!.fresh), ["-366278", "108992419600", "364274", false]);
    assert.deepEqual(facts(eight!.retention), ["-742166", "574746647036", "902150", true]);
    assert.deepEqual(facts(eight!.fresh), ["-1455438", "1503757164380", "1447422", true]);
  },
});

Deno.test({
  name:
    "on the SmolLM2 devnet's cohort windows (10 targets a row at least) both gate groups pass and the model answers Paris",
  ignore: file.path === null,
  fn: async () => {
    const r = await smollm2GateCheck(file.path!, [8], 0, {
      cohorts: true,
      minTargets: SMOLLM2_CURATOR_MIN_TARGETS,
      answer: true,
    });
    assert.deepEqual(r.cohorts, [
      "aa4a3124ffebb9b2c4216009f16e74d3ec00ec30f1a93475d64f4c9d06f12b41",
      "f998fcc4a8d445c71fcb0d098fb4cff7b818ea10f6f90e2c96decf20cf8a43bc",
    ]);
    assert.deepEqual(r.train_text, ["\n186 + 445 = 631", "\n25 * 20 = 500"]);
    assert.deepEqual(r.train_targets, [14, 12]);
    const facts = (g: { S: string; Q: string; G: string; pass: boolean }) => [g.S, g.Q, g.G, g.pass];
    assert.deepEqual(facts(r.groups[0]!.retention), ["-869761", "423811418327", "1029745", true]);
    assert.deepEqual(facts(r.groups[0]!.fresh), ["-575380", "236863050592", "567364", true]);
    assert.equal(r.answer, "The capital of France is Paris.");
  },
});
