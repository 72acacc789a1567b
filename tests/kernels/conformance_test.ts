import assert from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { checkVectors, computeVectors } from "../../kernels/conformance.ts";

const FILE = new URL("../../genesis/vectors/kernels.json", import.meta.url);
const TASK = new URL("../../tasks/kernels_vectors.ts", import.meta.url).pathname;

Deno.test("conformance: the kernels reproduce the committed vectors", async () => {
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  assert.equal(expected.format, "neuroshard-kernel-vectors-v1");
  assert.equal(expected.generation.tokens.length, 4);
  assert.deepEqual(checkVectors(expected), { ok: true });
});

Deno.test("conformance: a changed vector is refused with conformance_failed naming the entry", async () => {
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  expected.backward.scale = "0x1.0000000000000p+0";
  const v = checkVectors(expected, computeVectors());
  assert.equal(v.ok ? "ok" : v.code, "conformance_failed");
  assert.match(v.ok ? "" : v.message, /at backward/);
});

async function runVectors(env: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-env", TASK, "--print"],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test("conformance: two separate processes, with the fast path on and off, print the same vectors", async () => {
  const [fast, reference] = await Promise.all([runVectors({}), runVectors({ NEURO_KERNELS: "reference" })]);
  assert.equal(fast, reference);
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  assert.equal(canonical(JSON.parse(fast)), canonical(expected));
});
