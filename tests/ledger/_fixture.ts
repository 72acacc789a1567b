/** Shared fixtures for ledger tests: fixed keys, a genesis, an in-memory app and block helpers. */
import type { JsonObject, JsonValue } from "../../core/canonical.ts";
import { type AccountKey, keyFromSeed } from "../../ledger/keys.ts";
import { type Envelope, signBody, type TxBody } from "../../ledger/envelope.ts";
import {
  attestationMessage,
  type ConsensusKey,
  consensusKeyFromSeed,
  possessionMessage,
  signEd25519,
} from "../../ledger/consensus_key.ts";
import { type AppOptions, LedgerApp } from "../../ledger/app.ts";
import type { Attestation, Block } from "../../ledger/block.ts";
import { DEVNET_PARAMS } from "../../workflows/params.ts";
import { conformanceVectors } from "../../genesis/conformance.ts";

/** Fixed account keys: alice, bob, and validator owners. */
export const alice: AccountKey = keyFromSeed("a1".repeat(32));
export const bob: AccountKey = keyFromSeed("b2".repeat(32));
export const owners: AccountKey[] = [0, 1].map((i) => keyFromSeed((i + 0xc0).toString(16).repeat(32)));
/** Fixed consensus keys: two genesis validators, then spares for bonding. */
export const consSeeds: string[] = [0, 1, 2, 3].map((i) => (i + 0xd0).toString(16).repeat(32));
export const cons: ConsensusKey[] = consSeeds.map((seed) => consensusKeyFromSeed(seed));

export const CHAIN = "test-chain";
export const T0 = 1_700_000_000_000;

/** A genesis: alice 10,000,000, bob 0 (absent), two validators of 1,000,000 each (power 4). */
export function testGenesis(params: JsonObject = {}, consensus: JsonObject = {}): JsonObject {
  return {
    chain_id: CHAIN,
    genesis_time: T0,
    params: { ...DEVNET_PARAMS, activation_blocks: 2, evidence_blocks: 3, evidence_ms: 10_000, ...params },
    consensus: { epoch_blocks: 5, max_block_bytes: 1024 * 1024, block_interval_ms: 200, ...consensus },
    accounts: [{ id: alice.accountId, balance: 10_000_000 }, {
      id: owners[0]!.accountId,
      balance: 2_000_000,
    }],
    validators: [0, 1].map((i) => ({
      owner: owners[i]!.accountId,
      consensus_key: cons[i]!.publicKey,
      amount: 1_000_000,
    })),
    model: null,
    codec: null,
    vectors: conformanceVectors(),
  };
}

/** An in-memory app on the test genesis. */
export function testApp(
  options: AppOptions = {},
  params: JsonObject = {},
  consensus: JsonObject = {},
): LedgerApp {
  return LedgerApp.open(":memory:", testGenesis(params, consensus), options);
}

/** Signs a body of `kind` with the standard chain id. */
export function tx(key: AccountKey, kind: string, nonce: number, fields: JsonObject): Envelope {
  return signBody({ kind, chain_id: CHAIN, nonce, ...fields } as TxBody, key);
}

/** A valid bond envelope of `consensus` by `owner`. */
export function bondTx(owner: AccountKey, consensus: ConsensusKey, amount: number, nonce: number): Envelope {
  const possession = signEd25519(
    consensus,
    possessionMessage({
      chain_id: CHAIN,
      owner: owner.accountId,
      consensus_key: consensus.publicKey,
      amount,
      nonce,
    }),
  );
  return tx(owner, "bond", nonce, { consensus_key: consensus.publicKey, amount, possession });
}

/** Attestations of the app's current head by `keys`, sorted. */
export function attest(app: LedgerApp, keys: ConsensusKey[]): Attestation[] {
  const head = app.info();
  return keys
    .map((k) => ({
      consensus_key: k.publicKey,
      signature: signEd25519(k, attestationMessage(CHAIN, head.height, head.app_hash)),
    }))
    .sort((a, b) => (a.consensus_key < b.consensus_key ? -1 : 1));
}

/** The next block over the app's head with `txs` (time = head + 1s unless given). */
export function nextBlock(
  app: LedgerApp,
  txs: JsonValue[],
  lastCommit: Attestation[] = [],
  time?: number,
): Block {
  const head = app.info();
  return {
    chain_id: CHAIN,
    height: head.height + 1,
    time: time ?? head.time + 1000,
    prev_app_hash: head.app_hash,
    last_commit: lastCommit,
    txs,
  };
}

/** Finalizes and commits a block of `txs`; returns the tx results. */
export function run(app: LedgerApp, txs: JsonValue[], lastCommit: Attestation[] = [], time?: number) {
  const r = app.finalizeBlock(nextBlock(app, txs, lastCommit, time));
  app.commit();
  return r;
}

/** A snapshot of everything in state, for "state unchanged" assertions. */
export function snapshot(app: LedgerApp): string {
  const tables = ["account", "validator", "totals", "verifier_pool"];
  return JSON.stringify(tables.map((t) => app.store.scan(t)));
}
