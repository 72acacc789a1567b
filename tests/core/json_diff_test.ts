import assert from "node:assert/strict";
import { jsonDiff, MAX_VALUE_CHARS } from "../../core/json_diff.ts";

Deno.test("jsonDiff names a shortened array by its path and both lengths", () => {
  const expected = { claim: { challenge: { sealed: ["a", "b"] } } };
  const actual = { claim: { challenge: { sealed: ["a"] } } };
  assert.deepEqual(jsonDiff(expected, actual), ["claim.challenge.sealed: expected 2 items, actual 1"]);
});

Deno.test("jsonDiff reports a length change once and then the positions both arrays have", () => {
  assert.deepEqual(jsonDiff([1, 2, 3], [1, 5]), [
    "(whole value): expected 3 items, actual 2",
    "[1]: expected 2, actual 5",
  ]);
  assert.deepEqual(jsonDiff({ a: [7] }, { a: [] }), ["a: expected 1 item, actual 0"]);
});

Deno.test("jsonDiff lists missing and extra keys in code point order", () => {
  assert.deepEqual(jsonDiff({ b: 1, a: { x: true } }, { a: {}, c: null }), [
    "a.x: expected true, actual absent",
    "b: expected 1, actual absent",
    "c: expected absent, actual null",
  ]);
});

Deno.test("jsonDiff writes keys that are not identifiers in brackets and changed types as values", () => {
  assert.deepEqual(jsonDiff({ "odd key": { "0": 1 } }, { "odd key": { "0": "1" } }), [
    '["odd key"]["0"]: expected 1, actual "1"',
  ]);
  assert.deepEqual(jsonDiff({ a: [1] }, { a: { "0": 1 } }), ['a: expected [1], actual {"0":1}']);
  assert.deepEqual(jsonDiff(3, 4), ["(whole value): expected 3, actual 4"]);
});

Deno.test("jsonDiff finds nothing in equal values", () => {
  const v = { a: [1, { b: "c" }], d: null, e: false };
  assert.deepEqual(jsonDiff(v, structuredClone(v)), []);
});

Deno.test("jsonDiff shortens long values and counts differences past the limit", () => {
  const long = "x".repeat(200);
  const [line] = jsonDiff({ s: long }, { s: "y" });
  assert.equal(line, `s: expected "${"x".repeat(MAX_VALUE_CHARS - 2)}…, actual "y"`);
  const many = jsonDiff(
    Array.from({ length: 30 }, (_, i) => i),
    Array.from({ length: 30 }, (_, i) => i + 1),
    5,
  );
  assert.equal(many.length, 6);
  assert.equal(many[0], "[0]: expected 0, actual 1");
  assert.equal(many[5], "… and 25 more differences");
});
