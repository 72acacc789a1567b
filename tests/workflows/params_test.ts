import assert from "node:assert/strict";
import { checkParams, DEVNET_PARAMS, PARAM_NAMES, PRODUCTION_PARAMS } from "../../workflows/params.ts";

Deno.test("the production defaults are the protocol's numbers", () => {
  assert.equal(PRODUCTION_PARAMS.fee, 1_000);
  assert.equal(PRODUCTION_PARAMS.claim_bond, 20_000_000);
  assert.equal(PRODUCTION_PARAMS.challenge_bond, 2_000_000);
  assert.equal(PRODUCTION_PARAMS.reward, 1_000_000);
  assert.equal(PRODUCTION_PARAMS.verifier_share_bps, 2_000);
  assert.equal(PRODUCTION_PARAMS.steps_per_period, 256);
  assert.equal(PRODUCTION_PARAMS.growths_per_period, 1);
  assert.equal(PRODUCTION_PARAMS.period_blocks, 86_400);
  assert.equal(PRODUCTION_PARAMS.bond_unit, 250_000);
  assert.equal(PARAM_NAMES.length, 23);
});

Deno.test("both presets pass the parameter check", () => {
  assert.deepEqual(checkParams(PRODUCTION_PARAMS), { ok: true, value: PRODUCTION_PARAMS });
  assert.deepEqual(checkParams(DEVNET_PARAMS), { ok: true, value: DEVNET_PARAMS });
});

Deno.test("params are rejected for a missing or extra name, a non-integer, a negative, or incoherent bounds", () => {
  const { fee: _fee, ...missing } = PRODUCTION_PARAMS;
  const cases: [Record<string, unknown>, RegExp][] = [
    [missing, /names are/],
    [{ ...PRODUCTION_PARAMS, extra: 1 }, /names are/],
    [{ ...PRODUCTION_PARAMS, fee: 1.5 }, /fee is 1.5, expected a non-negative integer/],
    [{ ...PRODUCTION_PARAMS, reward: -1 }, /reward is -1/],
    [{ ...PRODUCTION_PARAMS, reward: "1" }, /reward is 1, expected/],
    [{ ...PRODUCTION_PARAMS, claim_bond: 0 }, /claim_bond is 0, expected at least 1/],
    [{ ...PRODUCTION_PARAMS, verifier_share_bps: 10_001 }, /verifier_share_bps is 10001, above 10000/],
    [{ ...PRODUCTION_PARAMS, steps_per_cohort: 65 }, /steps_per_cohort is 65, above 64/],
    [{ ...PRODUCTION_PARAMS, max_claim_blocks: 1_800 }, /max_claim_blocks is 1800/],
    [{ ...PRODUCTION_PARAMS, min_inference_blocks: 1_800 }, /inference blocks are 1800-86400/],
  ];
  for (const [value, message] of cases) {
    const r = checkParams(value);
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.code, "invalid_value");
      assert.match(r.message, message);
    }
  }
});
