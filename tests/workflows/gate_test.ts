import assert from "node:assert/strict";
import {
  documentLoss,
  exactBinary,
  floorDiv,
  FRESH_MARGIN,
  groupGate,
  microQ,
  ratioToFloat64,
  RETENTION_MARGIN,
} from "../../workflows/gate.ts";

const N = 32;
const fill = (v: bigint) => Array<bigint>(N).fill(v);

Deno.test("q takes floor(x·10^6) of the exact binary value, not of a rounded product", () => {
  assert.equal(microQ(2.0), 2_000_000n);
  assert.equal(microQ(1.9), 1_899_999n); // 1.89999999999999991118…
  assert.equal(microQ(2.1), 2_100_000n); // 2.10000000000000008881…
  assert.equal(microQ(0.1), 100_000n);
  assert.equal(microQ(-0.1), -100_001n); // floor goes toward −∞
  assert.equal(microQ(1e-6), 0n); // 9.99999999999999954748e-7, although 1e-6 * 1e6 === 1 in float64
  assert.equal(1e-6 * 1e6, 1);
  assert.equal(microQ(0), 0n);
  assert.equal(microQ(-0), 0n);
  assert.equal(microQ(5e-324), 0n);
  assert.equal(microQ(-5e-324), -1n);
  assert.equal(microQ(2 ** 60), 1_152_921_504_606_846_976_000_000n);
  assert.throws(() => microQ(NaN), /not finite/);
});

Deno.test("exact binary values decompose normal and subnormal float64s", () => {
  assert.deepEqual(exactBinary(1), { mantissa: 1n << 52n, exponent: -52 });
  assert.deepEqual(exactBinary(-0.75), { mantissa: -(3n << 51n), exponent: -53 });
  assert.deepEqual(exactBinary(5e-324), { mantissa: 1n, exponent: -1074 });
  assert.equal(floorDiv(-7n, 2n), -4n);
  assert.equal(floorDiv(7n, 2n), 3n);
  assert.equal(floorDiv(-8n, 2n), -4n);
});

Deno.test("rational rounding equals IEEE division for 2,000 random safe-integer ratios (seed printed on failure)", () => {
  let seed = 0x5eed1234;
  const next = () => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed;
  };
  for (let i = 0; i < 2000; i++) {
    const a = (next() * 2 ** 21 + (next() >>> 11)) % Number.MAX_SAFE_INTEGER;
    const b = 1 + ((next() * 2 ** (next() % 22) + next()) % Number.MAX_SAFE_INTEGER);
    const sign = next() % 2 === 0 ? 1 : -1;
    assert.equal(
      ratioToFloat64(BigInt(sign * a), BigInt(b)),
      (sign * a) / b,
      `seed step ${i}: ${sign * a}/${b}`,
    );
  }
});

Deno.test("rational rounding handles ties to even, subnormals and overflow", () => {
  assert.equal(ratioToFloat64((1n << 53n) + 1n, 1n), 2 ** 53); // tie → even
  assert.equal(ratioToFloat64((1n << 53n) + 3n, 1n), 2 ** 53 + 4); // tie → even (up)
  assert.equal(ratioToFloat64(1n, 1n << 1074n), 5e-324);
  assert.equal(ratioToFloat64(1n, 1n << 1075n), 0); // exactly half of the smallest subnormal → even (0)
  assert.equal(ratioToFloat64(3n, 1n << 1076n), 5e-324); // 0.75 of it → up
  assert.equal(ratioToFloat64(3n, 1n << 1075n), 1e-323); // 1.5 of it → tie → even (2)
  assert.equal(ratioToFloat64(1n << 1023n, 1n), 2 ** 1023);
  assert.throws(() => ratioToFloat64(1n << 1024n, 1n), /overflows float64/);
  assert.throws(() => ratioToFloat64(1n, 0n), /not positive/);
});

Deno.test("a document loss is the target-weighted mean rounded once from the exact rational", () => {
  assert.equal(documentLoss([{ loss: 2, targets: 3 }]), 2);
  assert.equal(documentLoss([{ loss: 1.25, targets: 3 }, { loss: 2.5, targets: 4 }]), 13.75 / 7);
  // Naive float arithmetic gives 0.20000000000000004; the exact mean of the three binary values rounds to 0.2.
  assert.equal(
    documentLoss([{ loss: 0.1, targets: 1 }, { loss: 0.2, targets: 1 }, { loss: 0.3, targets: 1 }]),
    0.2,
  );
  assert.equal((0.1 + 0.2 + 0.3) / 3, 0.20000000000000004);
  assert.throws(() => documentLoss([]), /no windows/);
  assert.throws(() => documentLoss([{ loss: 1, targets: 0 }]), /0 targets/);
});

Deno.test("every document improving 2.0 → 1.9 passes both groups", () => {
  const base = fill(microQ(2.0));
  const cand = fill(microQ(1.9));
  assert.deepEqual(groupGate(base, cand, RETENTION_MARGIN), {
    pass: true,
    S: "-3200032",
    Q: "0",
    G: "3839968",
  });
  assert.deepEqual(groupGate(base, cand, FRESH_MARGIN), { pass: true, S: "-3200032", Q: "0", G: "3167968" });
});

Deno.test("an unchanged candidate fails the fresh group", () => {
  const same = fill(2_000_000n);
  assert.deepEqual(groupGate(same, same, FRESH_MARGIN), { pass: false, S: "0", Q: "0", G: "-32064" });
  assert.equal(groupGate(same, same, RETENTION_MARGIN).pass, true);
});

Deno.test("exactly −1,000 micronats per document fails the fresh group; −1,003 passes", () => {
  assert.deepEqual(groupGate(fill(2_000_000n), fill(1_999_000n), FRESH_MARGIN), {
    pass: false,
    S: "-32000",
    Q: "0",
    G: "-64",
  });
  assert.deepEqual(groupGate(fill(2_000_000n), fill(1_998_998n), FRESH_MARGIN), {
    pass: false,
    S: "-32064",
    Q: "0",
    G: "0",
  });
  assert.equal(groupGate(fill(2_000_000n), fill(1_998_997n), FRESH_MARGIN).pass, true);
});

Deno.test("retention worse by 0.1 nats per document fails", () => {
  const r = groupGate(fill(microQ(2.0)), fill(microQ(2.1)), RETENTION_MARGIN);
  assert.deepEqual(r, { pass: false, S: "3200000", Q: "0", G: "-2560064" });
});

Deno.test("a mean improvement with high variance fails the confidence test", () => {
  const base = fill(2_000_000n);
  const cand = base.map((b, i) => b + (i % 2 === 0 ? -30_000n : 26_000n));
  const r = groupGate(base, cand, FRESH_MARGIN);
  assert.deepEqual(r, { pass: false, S: "-64000", Q: "802816000000", G: "31936" });
  // G² · 10^6 · 31 exceeds 2^53, so the comparison needs BigInt.
  assert.ok(31936n * 31936n * 1_000_000n * 31n > BigInt(Number.MAX_SAFE_INTEGER));
  // The same mean with small variance passes.
  const tight = base.map((b, i) => b + (i % 2 === 0 ? -2_100n : -1_900n));
  assert.equal(groupGate(base, tight, FRESH_MARGIN).pass, true);
});

Deno.test("the gate refuses mismatched or too few documents", () => {
  assert.throws(() => groupGate([1n], [1n], FRESH_MARGIN), /1 baseline and 1 candidate/);
  assert.throws(() => groupGate([1n, 2n], [1n], FRESH_MARGIN), /2 baseline and 1 candidate/);
});
