import { assertEquals } from "../_assert.ts";
import { fromHexFloat, toHexFloat } from "../../core/hex_float.ts";
import { ProtocolError } from "../../core/errors.ts";
import { seededRandom } from "../_seeded.ts";

const rows: { bits: string; hex: string }[] = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/hex_float.json", import.meta.url)),
).vectors;

function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt("0x" + hex));
  return view.getFloat64(0);
}

function bitsOf(x: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  return view.getBigUint64(0).toString(16).padStart(16, "0");
}

Deno.test("hex floats are spelled exactly as Python's float.hex() for 2,000 vectors", () => {
  for (const row of rows) {
    const x = fromBits(row.bits);
    assertEquals(toHexFloat(x), row.hex, `bits ${row.bits}`);
    assertEquals(bitsOf(fromHexFloat(row.hex)), row.bits, `hex ${row.hex}`);
  }
});

Deno.test("edge cases: signed zeros, subnormals, the largest finite value", () => {
  assertEquals(toHexFloat(0), "0x0.0p+0");
  assertEquals(toHexFloat(-0), "-0x0.0p+0");
  assertEquals(Object.is(fromHexFloat("-0x0.0p+0"), -0), true);
  assertEquals(toHexFloat(Number.MIN_VALUE), "0x0.0000000000001p-1022");
  assertEquals(toHexFloat(Number.MAX_VALUE), "0x1.fffffffffffffp+1023");
  assertEquals(fromHexFloat("0x1.fffffffffffffp+1023"), Number.MAX_VALUE);
  assertEquals(toHexFloat(2 ** -1022), "0x1.0000000000000p-1022");
  assertEquals(toHexFloat(1.5), "0x1.8000000000000p+0");
});

Deno.test("100,000 random doubles round-trip bit for bit", () => {
  const rand = seededRandom(0x5eed);
  const view = new DataView(new ArrayBuffer(8));
  let checked = 0;
  while (checked < 100_000) {
    view.setUint32(0, rand.u32());
    view.setUint32(4, rand.u32());
    const x = view.getFloat64(0);
    if (!Number.isFinite(x)) continue;
    const back = fromHexFloat(toHexFloat(x));
    if (bitsOf(back) !== bitsOf(x)) throw new Error(`round trip failed for ${bitsOf(x)} (seed 0x5eed)`);
    checked++;
  }
});

Deno.test("non-finite values and non-canonical spellings are rejected", () => {
  for (const x of [NaN, Infinity, -Infinity]) {
    try {
      toHexFloat(x);
      throw new Error("accepted " + x);
    } catch (e) {
      assertEquals((e as ProtocolError).code, "invalid_hex_float");
    }
  }
  const bad = [
    "0x1p+0", // digits not all written
    "0x1.0p+0",
    "0X1.0000000000000p+0",
    "0x1.0000000000000P+0",
    "0x1.0000000000000p0", // exponent unsigned
    "+0x1.0000000000000p+0",
    "0x1.000000000000Ap+0", // uppercase digit
    "0x0.0p-0",
    "0x0.0000000000000p+0", // zero spelled long
    "0x1.0000000000000p+1024", // beyond the largest finite
    "0x1.0000000000000p-1023", // normal below the range
    "0x0.0000000000001p-1021", // subnormal with the wrong exponent
    "0x2.0000000000000p+0",
    "inf",
    "nan",
    " 0x1.0000000000000p+0",
    "",
  ];
  for (const text of bad) {
    try {
      fromHexFloat(text);
      throw new Error("accepted " + text);
    } catch (e) {
      assertEquals((e as ProtocolError).code, "invalid_hex_float", text);
    }
  }
});
