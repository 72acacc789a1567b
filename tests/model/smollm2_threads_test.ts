/**
 * SmolLM2-135M on 1, 2 and 3 kernel threads against the reference loops (NEURO_KERNELS=reference): the logits
 * of every position of a 24-token prompt have the same SHA-256, and the greedy answer — from `generate`, from
 * `generate` on resident, prepacked weights (decoding one row at a time on the code panels of every block
 * matrix), from
 * draft-and-verify with the int8 drafter and with a deliberately wrong drafter — the same ids and logits, and
 * one 3-stage training step (attention's backward by head, the head's cross-entropy by vocabulary) the same
 * record root.
 * Each run is its own process (`_smollm2_probe.ts`), since the kernel path is chosen once per process. Slow
 * suite only.
 */
import assert from "node:assert/strict";
import { smollm2File } from "./smollm2_file.ts";

const file = await smollm2File();
const PROBE = new URL("./_smollm2_probe.ts", import.meta.url).pathname;

async function probe(env: Record<string, string>): Promise<Record<string, unknown>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", PROBE, file.path!],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test({
  name:
    "SmolLM2 logits, greedy answers (plain, drafted, wrongly drafted) and a training step on 1-3 threads equal the reference bit for bit",
  ignore: file.path === null,
  fn: async () => {
    const reference = await probe({ NEURO_KERNELS: "reference" });
    const threaded = [];
    for (const t of ["1", "2", "3"]) threaded.push(await probe({ NEURO_THREADS: t }));
    console.log(`reference ${JSON.stringify(reference)}; threaded ${JSON.stringify(threaded)}`);
    assert.deepEqual(threaded.map((r) => r.ready), [1, 2, 3]);
    for (const r of [reference, ...threaded]) {
      assert.deepEqual(r.resident, reference.greedy);
      assert.deepEqual(r.drafted, reference.greedy);
      assert.deepEqual(r.perturbed, reference.greedy);
      const pruned = r.pruned as { tokens: number[]; drafted: number[]; perturbed: number[] };
      const want = (reference.greedy as { tokens: number[] }).tokens;
      for (const how of ["tokens", "drafted", "perturbed"] as const) assert.deepEqual(pruned[how], want, how);
    }
    // on the kernels the pruned head decides every row itself; on the reference path the whole head does
    const headStats = (r: Record<string, unknown>) => (r.pruned as { stats: Record<string, number> }).stats;
    assert.equal(headStats(reference).rows, 0);
    for (const r of threaded) assert.equal(headStats(r).whole, 0, JSON.stringify(headStats(r)));
    // every block matrix (7 a block: Q4_1 blocks) and the tied embedding (the head: Q8_0 blocks) decode on
    // code panels
    for (const r of threaded) assert.equal(r.coded, 7 * 30 + 1);
    for (const r of threaded) {
      assert.equal(r.logits, reference.logits);
      assert.deepEqual(r.greedy, reference.greedy);
      assert.equal(r.step, reference.step);
    }
    const stats = reference.stats as { drafted: { drafted: number; accepted: number } };
    assert.ok(stats.drafted.accepted > 0, JSON.stringify(stats));
  },
});
