import assert from "node:assert/strict";
import {
  burn,
  escrowAfter,
  expiryBurn,
  lock,
  nonZero,
  release,
  rewardMoves,
  shareOf,
  slashSplit,
  splitReward,
} from "../../workflows/money.ts";

Deno.test("the default reward of 1,000,000 atoms sends 200,000 to verifiers and splits 800,000 over three workers", () => {
  assert.deepEqual(splitReward(1_000_000, 2_000, ["a", "b", "c"]), {
    verifier: 200_000,
    workers: [["a", 266_667], ["b", 266_667], ["c", 266_666]],
  });
});

Deno.test("the reward remainder goes one atom each to the first workers in order", () => {
  // 1,000,003 · 20% = 200,000.6 → 200,000; rest 800,003 over 7 = 114,286 r 1.
  assert.deepEqual(splitReward(1_000_003, 2_000, ["a", "b", "c", "d", "e", "f", "g"]), {
    verifier: 200_000,
    workers: [
      ["a", 114_287],
      ["b", 114_286],
      ["c", 114_286],
      ["d", 114_286],
      ["e", 114_286],
      ["f", 114_286],
      [
        "g",
        114_286,
      ],
    ],
  });
  assert.deepEqual(splitReward(10, 0, ["a", "b", "c", "d"]).workers, [["a", 3], ["b", 3], ["c", 2], [
    "d",
    2,
  ]]);
  assert.deepEqual(splitReward(7, 10_000, ["a"]), { verifier: 7, workers: [["a", 0]] });
  assert.throws(() => splitReward(7, 0, []), /worker list is empty/);
});

Deno.test("reward moves mint the verifier share then each worker's part and skip zero amounts", () => {
  assert.deepEqual(rewardMoves(5, 2_000, ["a", "b", "c"]), [
    { op: "mint_verifiers", amount: 1 },
    { op: "mint", account: "a", amount: 2 },
    { op: "mint", account: "b", amount: 1 },
    { op: "mint", account: "c", amount: 1 },
  ]);
  assert.deepEqual(rewardMoves(0, 2_000, ["a"]), []);
});

Deno.test("shares are exact for amounts whose product with the basis points exceeds 2^53", () => {
  assert.equal(shareOf(9_007_199_254_740_991, 2_000), 1_801_439_850_948_198);
  assert.equal(shareOf(999, 2_000), 199);
});

Deno.test("an expired bond burns 10% rounded down and a slash gives the challenger half rounded down", () => {
  assert.equal(expiryBurn(20_000_000), 2_000_000);
  assert.equal(expiryBurn(19), 1);
  assert.deepEqual(slashSplit(20_000_000), { challenger: 10_000_000, burned: 10_000_000 });
  assert.deepEqual(slashSplit(7), { challenger: 3, burned: 4 });
});

Deno.test("escrow is locks minus releases and burns; mints do not touch it", () => {
  const moves = [lock("a", 10), release("a", 3), burn(2), { op: "mint" as const, account: "b", amount: 5 }];
  assert.equal(escrowAfter(moves), 5);
  assert.deepEqual(nonZero([burn(0), release("a", 0), lock("b", 1)]), [lock("b", 1)]);
});
