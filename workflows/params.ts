/**
 * The genesis parameters the lifecycle machines read from `env.params` (PROTOCOL, values marked *(param)*).
 *
 * Amounts are integer atoms (1 NEURO = 1,000,000 atoms); durations are block counts except `evidence_ms`.
 * `PRODUCTION_PARAMS` holds the protocol defaults for a network with one-second blocks (so `period_blocks`
 * 86,400 is a day); `DEVNET_PARAMS` keeps every amount and rule but scales block counts down so that a whole
 * epoch runs in minutes on one machine.
 *
 * @example
 * ```ts
 * import { DEVNET_PARAMS, checkParams } from "./params.ts";
 * checkParams(DEVNET_PARAMS); // { ok: true, value: DEVNET_PARAMS }
 * ```
 */
import { reject, type Rejection } from "../core/errors.ts";

/** Atoms in one NEURO. */
export const ATOMS_PER_NEURO = 1_000_000;

/** Basis points in a whole (10,000 bps = 100%). */
export const BPS = 10_000;

/** The typed genesis parameters every workflow machine receives as `env.params`. */
export type WorkflowParams = {
  /** Burned by every accepted transaction (§2). */
  readonly fee: number;
  /** Locked by `reserve`, `grow`, `propose_data` and every score claim (§5, §6, §7). */
  readonly claim_bond: number;
  /** Locked by `challenge` (§5). */
  readonly challenge_bond: number;
  /** Minted for an accepted training step (§5). */
  readonly reward: number;
  /** Share of each minted reward that goes to the block's verifiers, in basis points (2,000 = 20%) (§4). */
  readonly verifier_share_bps: number;
  /** Blocks an assignment stays reserved before it expires (§5 `reserve`). */
  readonly lease_blocks: number;
  /** Blocks a claim stays open to challenges, and the window reopened after a cleared challenge (§5). */
  readonly challenge_blocks: number;
  /** Blocks a challenge may wait for its uploads, seal and resolution (§5 `challenge`). */
  readonly availability_blocks: number;
  /** Absolute lifetime of a claim in blocks; past it the claim closes unpaid (§5). */
  readonly max_claim_blocks: number;
  /** Blocks before a bond or a data proposal can activate (§4, §6). */
  readonly activation_blocks: number;
  /** Blocks a data proposal stays open before it expires (§6). */
  readonly proposal_blocks: number;
  /** Blocks an evaluation stays open before it fails (§7). */
  readonly evaluation_blocks: number;
  /** Paid steps per budget period (§5.2). */
  readonly steps_per_period: number;
  /** Growths per budget period (§5.2). */
  readonly growths_per_period: number;
  /** Blocks in one budget period (§5.2). */
  readonly period_blocks: number;
  /** A validator bond is a positive multiple of this many atoms; power = amount / bond_unit (§4). */
  readonly bond_unit: number;
  /** Blocks a removed validator waits before withdrawing (§4). */
  readonly evidence_blocks: number;
  /** Milliseconds of block time a removed validator waits before withdrawing (§4). */
  readonly evidence_ms: number;
  /** Scheduled training batches per activated cohort, 1-64 (§6). */
  readonly steps_per_cohort: number;
  /** Atoms paid per generated token of paid inference (§8). */
  readonly price_per_token: number;
  /** Locked by a provider's `respond`, which is a claim (§8). */
  readonly provider_bond: number;
  /** Fewest blocks an inference request may stay open (§8 `expires_in`). */
  readonly min_inference_blocks: number;
  /** Most blocks an inference request may stay open (§8 `expires_in`). */
  readonly max_inference_blocks: number;
};

/** Protocol defaults for a production network with one-second blocks. */
export const PRODUCTION_PARAMS: WorkflowParams = {
  fee: 1_000,
  claim_bond: 20 * ATOMS_PER_NEURO,
  challenge_bond: 2 * ATOMS_PER_NEURO,
  reward: 1 * ATOMS_PER_NEURO,
  verifier_share_bps: 2_000,
  lease_blocks: 3_600, // one hour to compute and claim a step
  challenge_blocks: 1_800, // half an hour for any referee to look
  availability_blocks: 3_600, // uploads of up to 256 MiB per object take time
  max_claim_blocks: 43_200, // half a day: bounds how long repeated challenges can hold a claim
  activation_blocks: 3_600,
  proposal_blocks: 86_400, // a day to review and vote a cohort
  evaluation_blocks: 86_400,
  steps_per_period: 256,
  growths_per_period: 1,
  period_blocks: 86_400,
  bond_unit: 250_000,
  evidence_blocks: 604_800, // a week of blocks
  evidence_ms: 7 * 24 * 3_600_000, // and a week of block time
  steps_per_cohort: 64,
  price_per_token: 100,
  provider_bond: 20 * ATOMS_PER_NEURO,
  min_inference_blocks: 3_700, // must exceed challenge_blocks so a response can still settle
  max_inference_blocks: 86_400,
};

/** The devnet preset: the same amounts and rules with block counts scaled down for a run of minutes. */
export const DEVNET_PARAMS: WorkflowParams = {
  ...PRODUCTION_PARAMS,
  lease_blocks: 40,
  challenge_blocks: 6,
  availability_blocks: 20,
  max_claim_blocks: 120,
  activation_blocks: 3,
  proposal_blocks: 60,
  evaluation_blocks: 600,
  period_blocks: 86_400,
  evidence_blocks: 10,
  evidence_ms: 10_000,
  steps_per_cohort: 4,
  min_inference_blocks: 10,
  max_inference_blocks: 200,
};

/** Every parameter name, in declaration order. */
export const PARAM_NAMES = Object.keys(PRODUCTION_PARAMS) as (keyof WorkflowParams)[];

/** Checks a parameter object: exactly the known names, non-negative safe integers, and coherent bounds. */
export function checkParams(value: Record<string, unknown>): { ok: true; value: WorkflowParams } | Rejection {
  const names = Object.keys(value).sort();
  const expected = [...PARAM_NAMES].sort();
  if (names.join(",") !== expected.join(",")) {
    return reject(
      "invalid_value",
      `Cannot use params: names are ${names.join(",")}, expected ${expected.join(",")}`,
    );
  }
  for (const name of PARAM_NAMES) {
    const v = value[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
      return reject(
        "invalid_value",
        `Cannot use params: ${name} is ${String(v)}, expected a non-negative integer`,
      );
    }
  }
  const p = value as WorkflowParams;
  const positive: (keyof WorkflowParams)[] = [
    "claim_bond",
    "challenge_bond",
    "lease_blocks",
    "challenge_blocks",
    "availability_blocks",
    "max_claim_blocks",
    "period_blocks",
    "bond_unit",
    "steps_per_cohort",
    "provider_bond",
  ];
  for (const name of positive) {
    if (p[name] === 0) return reject("invalid_value", `Cannot use params: ${name} is 0, expected at least 1`);
  }
  if (p.verifier_share_bps > BPS) {
    return reject(
      "invalid_value",
      `Cannot use params: verifier_share_bps is ${p.verifier_share_bps}, above ${BPS}`,
    );
  }
  if (p.steps_per_cohort > 64) {
    return reject("invalid_value", `Cannot use params: steps_per_cohort is ${p.steps_per_cohort}, above 64`);
  }
  if (p.max_claim_blocks <= p.challenge_blocks) {
    return reject(
      "invalid_value",
      `Cannot use params: max_claim_blocks is ${p.max_claim_blocks}, not above challenge_blocks ${p.challenge_blocks}`,
    );
  }
  if (p.min_inference_blocks <= p.challenge_blocks || p.max_inference_blocks < p.min_inference_blocks) {
    return reject(
      "invalid_value",
      `Cannot use params: inference blocks are ${p.min_inference_blocks}-${p.max_inference_blocks}, challenge_blocks ${p.challenge_blocks}`,
    );
  }
  return { ok: true, value: p };
}
