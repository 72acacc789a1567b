import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import {
  documentId,
  hammingDistance,
  heldOutRole,
  isNearDuplicate,
  normalizeText,
  simhash64,
} from "../../text/hygiene.ts";

Deno.test("document ids come from NFKC-casefolded, whitespace-collapsed text (values from Python casefold)", () => {
  assert.equal(normalizeText("  Straße\u3000ﬁne\tWORLD "), "strasse fine world");
  assert.equal(
    documentId("  Straße\u3000ﬁne\tWORLD "),
    "4adc028e7d3d65a2b04b9fff18684c6b02cf5dce7d63505d571a6822d04a545e",
  );
  assert.equal(documentId("strasse fine world"), documentId("STRASSE\n\nFine   world"));
  assert.equal(documentId("hello world"), "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  assert.notEqual(documentId("hello world"), documentId("hello-world"));
});

Deno.test("the held-out role is decided by the id alone", () => {
  assert.equal(heldOutRole("00000000" + "f".repeat(56)), "evaluation"); // 0 % 1000 = 0
  assert.equal(heldOutRole("000003e7" + "0".repeat(56)), "training"); // 999
  assert.equal(heldOutRole("00000063" + "0".repeat(56)), "evaluation"); // 99
  assert.equal(heldOutRole("00000064" + "0".repeat(56)), "training"); // 100
  assert.equal(heldOutRole("00000064" + "0".repeat(56), 101), "evaluation");
  assert.throws(
    () => heldOutRole("XYZ"),
    (e) =>
      e instanceof ProtocolError && e.code === "invalid_hex" && /"XYZ" is not a document id/.test(e.message),
  );
  assert.throws(() => heldOutRole("0".repeat(64), 1001), RangeError);
  let evaluation = 0;
  for (let i = 0; i < 2000; i++) if (heldOutRole(documentId(`doc ${i}`)) === "evaluation") evaluation++;
  assert.ok(evaluation > 140 && evaluation < 260, `${evaluation} of 2000 held out`);
});

Deno.test("SimHash over 5-word shingles matches a Python reference and finds near-duplicates at distance 3", () => {
  assert.equal(
    simhash64("The quick brown fox jumps over the lazy dog and keeps running far away"),
    "cc6c4113212c2054",
  );
  assert.equal(simhash64("a b"), "c8687a08aa5d6ed2");
  assert.equal(simhash64(""), "0000000000000000");
  assert.equal(hammingDistance("0000000000000000", "000000000000000f"), 4);
  assert.equal(isNearDuplicate("0000000000000000", "0000000000000007"), true);
  assert.equal(isNearDuplicate("0000000000000000", "000000000000000f"), false);
  assert.throws(
    () => hammingDistance("00", "11"),
    (e) => e instanceof ProtocolError && e.code === "invalid_hex" && /16 lowercase hex/.test(e.message),
  );
  const words = Array.from({ length: 400 }, (_, i) => `w${(i * 7919) % 1009}`);
  const a = words.join(" ");
  const b = [...words.slice(0, 200), "changed", ...words.slice(201)].join(" ");
  const c = Array.from({ length: 400 }, (_, i) => `v${(i * 104729) % 1013}`).join(" ");
  assert.ok(
    isNearDuplicate(simhash64(a), simhash64(b)),
    `distance ${hammingDistance(simhash64(a), simhash64(b))}`,
  );
  assert.ok(
    !isNearDuplicate(simhash64(a), simhash64(c)),
    `distance ${hammingDistance(simhash64(a), simhash64(c))}`,
  );
  assert.equal(simhash64(a.toUpperCase()), simhash64(a));
});
