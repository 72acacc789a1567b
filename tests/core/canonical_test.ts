import { assertEquals, assertThrows } from "../_assert.ts";
import {
  canonical,
  compareCodePoints,
  decodeCanonical,
  encodeStringSlow,
  parseJson,
} from "../../core/canonical.ts";
import { seededRandom } from "../_seeded.ts";
import { ProtocolError } from "../../core/errors.ts";

interface Vector {
  name: string;
  value: unknown;
  canonical: string;
}
const vectors: Vector[] = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/canonical.json", import.meta.url)),
).vectors;

for (const v of vectors) {
  Deno.test(`canonical JSON equals Python's json.dumps for ${v.name}`, () => {
    assertEquals(canonical(v.value), v.canonical);
    assertEquals(canonical(decodeCanonical(v.canonical)), v.canonical);
  });
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof ProtocolError) return e.code;
    throw e;
  }
  throw new Error("expected a ProtocolError");
}

Deno.test("astral keys sort by code point, not by UTF-16 unit", () => {
  assertEquals(compareCodePoints("\uffff", "\u{10000}") < 0, true);
  assertEquals("\uffff" < "\u{10000}", false); // the default JS order is wrong here
  assertEquals(canonical({ "\u{1F600}": 1, "\uffff": 2 }), '{"\\uffff":2,"\\ud83d\\ude00":1}');
});

Deno.test("decode rejects duplicate keys", () => {
  assertEquals(code(() => decodeCanonical('{"a":1,"a":1}')), "duplicate_key");
  assertEquals(code(() => parseJson('{"a":{"b":1,"b":2}}')), "duplicate_key");
});

Deno.test("decode rejects floats, exponents and negative zero spellings", () => {
  assertEquals(code(() => decodeCanonical("1.0")), "float_not_allowed");
  assertEquals(code(() => decodeCanonical("[1e3]")), "float_not_allowed");
  assertEquals(code(() => decodeCanonical('{"a":0.5}')), "float_not_allowed");
  assertEquals(code(() => decodeCanonical("-0")), "non_canonical");
});

Deno.test("decode rejects integers outside the safe range", () => {
  assertEquals(code(() => decodeCanonical("9007199254740992")), "unsafe_integer");
  assertEquals(code(() => decodeCanonical("-9007199254740992")), "unsafe_integer");
  assertEquals(code(() => decodeCanonical("123456789012345678901234567890")), "unsafe_integer");
  assertEquals(decodeCanonical("9007199254740991"), 9007199254740991);
});

Deno.test("decode rejects NaN, Infinity and malformed JSON", () => {
  assertEquals(code(() => decodeCanonical("NaN")), "invalid_json");
  assertEquals(code(() => decodeCanonical("[Infinity]")), "invalid_json");
  assertEquals(code(() => decodeCanonical('{"a":1')), "invalid_json");
  assertEquals(code(() => decodeCanonical("[01]")), "invalid_json");
  assertEquals(code(() => decodeCanonical("'a'")), "invalid_json");
  assertEquals(code(() => decodeCanonical('"\t"')), "invalid_json");
  assertEquals(code(() => decodeCanonical("")), "invalid_json");
});

Deno.test("decode rejects trailing data", () => {
  assertEquals(code(() => decodeCanonical('{"a":1}x')), "trailing_data");
  assertEquals(code(() => decodeCanonical("1 2")), "trailing_data");
  assertEquals(code(() => decodeCanonical("{} ")), "non_canonical"); // whitespace is not data, but not canonical
});

Deno.test("decode rejects input that does not re-encode to the same bytes", () => {
  assertEquals(code(() => decodeCanonical('{"b":1,"a":2}')), "non_canonical");
  assertEquals(code(() => decodeCanonical('{"a": 1}')), "non_canonical");
  assertEquals(code(() => decodeCanonical('"\\u00E9"')), "non_canonical");
  assertEquals(code(() => decodeCanonical('"\\/"')), "non_canonical");
  assertEquals(code(() => decodeCanonical('"\\u0041"')), "non_canonical");
  assertEquals(code(() => decodeCanonical(new TextEncoder().encode('"é"'))), "non_canonical");
});

Deno.test("lone surrogates are refused both ways", () => {
  assertEquals(code(() => canonical("\ud800")), "invalid_value");
  assertEquals(code(() => canonical("a\udc00b")), "invalid_value");
  assertEquals(code(() => decodeCanonical('"\\ud800"')), "invalid_value");
});

Deno.test("encode refuses floats, unsafe integers, undefined and non-plain objects", () => {
  assertEquals(code(() => canonical(0.5)), "float_not_allowed");
  assertEquals(code(() => canonical(NaN)), "float_not_allowed");
  assertEquals(code(() => canonical(2 ** 53)), "unsafe_integer");
  assertEquals(code(() => canonical({ a: undefined })), "invalid_value");
  assertEquals(code(() => canonical(new Date(0))), "invalid_value");
  assertEquals(code(() => canonical(1n)), "invalid_value");
});

Deno.test("nesting deeper than the bound is refused", () => {
  const deep = "[".repeat(65) + "]".repeat(65);
  assertEquals(code(() => decodeCanonical(deep)), "too_deep");
  assertEquals(decodeCanonical("[".repeat(64) + "]".repeat(64)) !== null, true);
});

Deno.test("a __proto__ key is an own property, not a prototype", () => {
  const v = decodeCanonical('{"__proto__":{"x":1}}') as Record<string, unknown>;
  assertEquals(Object.keys(v), ["__proto__"]);
  assertEquals(canonical(v), '{"__proto__":{"x":1}}');
});

Deno.test("parseJson accepts whitespace but keeps the strict value rules", () => {
  assertEquals(parseJson(' { "b" : [ 1 , 2 ] ,\n "a" : "\\u00e9" } '), { b: [1, 2], a: "é" });
  assertThrows(() => parseJson('{"a":1.5}'), ProtocolError);
});

Deno.test("the fast string path equals the unit-by-unit reference on 20,000 random strings", () => {
  const rand = seededRandom(0xc0de);
  const pools = [
    [0x20, 0x7f],
    [0, 0x20],
    [0x7f, 0x100],
    [0x100, 0xd800],
    [0xe000, 0x10000],
  ];
  for (let n = 0; n < 20_000; n++) {
    let s = "";
    const len = rand.below(12);
    for (let i = 0; i < len; i++) {
      const choice = rand.below(7);
      if (choice === 6) {
        s += String.fromCodePoint(0x10000 + rand.below(0x100000)); // astral: a surrogate pair
      } else if (choice === 5) {
        s += '"\\/'[rand.below(3)];
      } else {
        const [lo, hi] = pools[choice]!;
        s += String.fromCharCode(lo! + rand.below(hi! - lo!));
      }
    }
    assertEquals(canonical(s), encodeStringSlow(s), `seed 0xc0de, string #${n}: ${JSON.stringify(s)}`);
  }
});
