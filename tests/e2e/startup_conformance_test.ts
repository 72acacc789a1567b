/**
 * The startup conformance check (PROTOCOL §10.6) against real processes: validators, workers, referees,
 * providers and evaluators whose kernels are deliberately wrong (the test hook `NEURO_TEST_PERTURB_KERNEL`)
 * refuse to start with one line naming the vector, exit 1, and leave nothing behind; an honest validator
 * refuses a genesis that pins other vectors; honest roles start.
 */
import assert from "node:assert/strict";
import { canonical, type JsonObject } from "../../core/canonical.ts";
import { conformanceVectors } from "../../genesis/conformance.ts";
import { consSeeds, testGenesis } from "../ledger/_fixture.ts";
import { getJson, type NodeProc, prepare, startProc, stopProc } from "./_ledger_procs.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const PERTURBED = { NEURO_TEST_PERTURB_KERNEL: "rmsnorm" };
const HEX = '"[0-9a-f]{64}"';
/** What a perturbed rmsnorm breaks first: the first stage's forward output. */
const REFUSAL = new RegExp(
  `^error: Cannot start: kernels do not reproduce conformance vector forward\\.stage_0_output: ` +
    `computed ${HEX}, pinned ${HEX} \\(conformance_failed\\)$`,
);

async function runTask(
  task: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `${ROOT}tasks/${task}.ts`, ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Asserts a refusal: exit 1, nothing on stdout, one stderr line matching `line`, and `absent` not created. */
async function assertRefused(
  r: { code: number; stdout: string; stderr: string },
  line: RegExp,
  absent: string,
): Promise<void> {
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  assert.match(r.stderr.trimEnd(), line);
  assert.equal(await exists(absent), false, `${absent} was created`);
}

Deno.test("roles whose kernels are perturbed refuse to start naming the vector; honest ones start; the chain is untouched", async () => {
  const dir = await Deno.makeTempDir();
  let node: NodeProc | null = null;
  try {
    const path = await prepare(dir, testGenesis(), consSeeds.slice(0, 1));
    await Deno.writeTextFile(`${dir}/workers.json`, canonical([{ url: "http://127.0.0.1:9", token: "t" }]));
    const v = await runTask("validator", ["--home", `${dir}/bad-v`, "--genesis", path], PERTURBED);
    await assertRefused(v, REFUSAL, `${dir}/bad-v`);
    await assertRefused(
      await runTask("worker", ["--home", `${dir}/bad-w`], PERTURBED),
      REFUSAL,
      `${dir}/bad-w`,
    );
    node = await startProc(`${dir}/v0`, path, { intervalMs: 100 });
    const rpc = node.url;
    const before = await getJson<{ height: number }>(`${rpc}/status`);
    assert.deepEqual(await getJson(`${rpc}/vectors`), conformanceVectors());
    for (
      const [task, extra] of [
        ["referee", []],
        ["provider", []],
        ["evaluator", ["--workers", `${dir}/workers.json`]],
      ] as const
    ) {
      const home = `${dir}/bad-${task}`;
      const r = await runTask(task, ["--home", home, "--rpc", rpc, ...extra], PERTURBED);
      await assertRefused(r, REFUSAL, home);
    }
    // The honest referee passes the same check against the chain's vectors and runs one pass.
    const honest = await runTask("referee", ["--home", `${dir}/referee`, "--rpc", rpc, "--once"]);
    assert.equal(honest.code, 0, honest.stdout + honest.stderr);
    assert.match(honest.stdout, /^status height=\d+ .* claims=0 /m);
    // Nothing reached the chain: no transaction was ever applied (every one burns a fee).
    const supply = await getJson<JsonObject>(`${rpc}/supply`);
    assert.equal(supply.issued, 0);
    assert.equal(supply.burned, 0);
    assert.ok((await getJson<{ height: number }>(`${rpc}/status`)).height >= before.height);
  } finally {
    if (node) await stopProc(node);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an honest validator refuses a genesis that pins other vectors, naming the vector that differs", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const genesis = testGenesis();
    const vectors = conformanceVectors() as { forward: { loss: string } };
    const pinned = "0x1.0000000000000p+2";
    const computed = vectors.forward.loss;
    vectors.forward.loss = pinned;
    const path = await prepare(dir, { ...genesis, vectors } as JsonObject, consSeeds.slice(0, 1));
    const r = await runTask("validator", ["--home", `${dir}/v0`, "--genesis", path]);
    await assertRefused(
      r,
      new RegExp(
        `^error: Cannot start: kernels do not reproduce conformance vector forward\\.loss: ` +
          `computed "${computed.replaceAll(".", "\\.").replaceAll("+", "\\+")}", ` +
          `pinned "0x1\\.0000000000000p\\+2" \\(conformance_failed\\)$`,
      ),
      `${dir}/v0/state.sqlite`, // v0/ holds only the consensus key prepare wrote
    );
    const none = `${dir}/no-vectors.json`;
    await Deno.writeTextFile(none, canonical({ ...genesis, vectors: null }));
    const n = await runTask("validator", ["--home", `${dir}/v1`, "--genesis", none]);
    await assertRefused(
      n,
      /^error: Cannot use genesis: vectors is null, expected a neuroshard-kernel-vectors-v1 document \(invalid_value\)$/,
      `${dir}/v1`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
