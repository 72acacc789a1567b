import assert from "node:assert/strict";
import { canonical } from "../../core/canonical.ts";
import { assertConformance, checkVectors, computeVectors } from "../../kernels/conformance.ts";
import { ProtocolError } from "../../core/errors.ts";

const FILE = new URL("../../genesis/vectors/kernels.json", import.meta.url);
const TASK = new URL("../../tasks/kernels_vectors.ts", import.meta.url).pathname;

Deno.test("conformance: the kernels reproduce the committed vectors", async () => {
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  assert.equal(expected.format, "neuroshard-kernel-vectors-v1");
  assert.equal(expected.generation.tokens.length, 4);
  assert.deepEqual(checkVectors(expected), { ok: true });
});

Deno.test("conformance: a changed vector is refused with conformance_failed naming the vector, computed and pinned", async () => {
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  const scale = expected.backward.scale;
  expected.backward.scale = "0x1.0000000000000p+0";
  const v = checkVectors(expected, computeVectors());
  assert.deepEqual(v, {
    ok: false,
    code: "conformance_failed",
    message: "Cannot start: kernels do not reproduce conformance vector backward.scale: " +
      `computed "${scale}", pinned "0x1.0000000000000p+0"`,
  });
  expected.backward.scale = scale;
  expected.generation.tokens = [1, 2, 3, 4];
  const t = checkVectors(expected, computeVectors());
  assert.equal(
    t.ok ? "" : t.message,
    "Cannot start: kernels do not reproduce conformance vector generation.tokens: computed [8,8,8,8], " +
      "pinned [1,2,3,4]",
  );
  const missing = checkVectors(null, computeVectors());
  assert.match(
    missing.ok ? "" : missing.message,
    /conformance vector \(the document\): computed \{"backward"/,
  );
});

Deno.test("conformance: assertConformance throws conformance_failed for other vectors and passes the pinned ones", async () => {
  const expected = JSON.parse(await Deno.readTextFile(FILE));
  assertConformance(expected);
  expected.forward.loss = "0x1.0000000000000p+2";
  assert.throws(
    () => assertConformance(expected),
    (e: unknown) =>
      e instanceof ProtocolError && e.code === "conformance_failed" &&
      /conformance vector forward\.loss: computed "0x1\.[0-9a-f]{13}p\+2", pinned "0x1\.0000000000000p\+2"$/
        .test(
          e.message,
        ),
  );
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
