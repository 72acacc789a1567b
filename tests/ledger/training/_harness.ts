/**
 * An in-process ledger with a training genesis (the devnet model, one or more batches of 1 × 8 tokens), funded
 * sponsor, workers and challenger accounts, and helpers to sign training transactions, commit blocks with
 * both validators attesting, and check that a rejected transaction leaves the state exactly unchanged.
 */
import assert from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../../core/canonical.ts";
import { canonicalBytes } from "../../../core/canonical.ts";
import { sha256Hex } from "../../../core/digest.ts";
import { toHexFloat } from "../../../core/hex_float.ts";
import type { Batch } from "../../../kernels/batch.ts";
import { PRESETS } from "../../../kernels/config.ts";
import { buildManifest, componentFiles, type Manifest } from "../../../kernels/manifest.ts";
import { initModel } from "../../../kernels/model.ts";
import { type AppOptions, LedgerApp } from "../../../ledger/app.ts";
import { type Envelope, signBody, type TxBody, txid } from "../../../ledger/envelope.ts";
import { type AccountKey, keyFromSeed } from "../../../ledger/keys.ts";
import type { TxResult } from "../../../ledger/state/store.ts";
import { DEVNET_PARAMS } from "../../../workflows/params.ts";
import { attest, CHAIN, cons, owners, T0 } from "../_fixture.ts";
import type { ConsensusKey } from "../../../ledger/consensus_key.ts";
import { conformanceVectors } from "../../../genesis/conformance.ts";

export { CHAIN };

/** The sponsor (claims), three workers, a challenger and a stranger. */
export const sponsor: AccountKey = keyFromSeed("5a".repeat(32));
export const workers: AccountKey[] = [0, 1, 2].map((i) => keyFromSeed((0x71 + i).toString(16).repeat(32)));
export const challenger: AccountKey = keyFromSeed("6c".repeat(32));
export const stranger: AccountKey = keyFromSeed("7e".repeat(32));
/** Validator owners (they receive the verifier rewards). */
export { owners };

/** Learning rate and clip of the test genesis. */
export const LR = 0.01;
export const CLIP = 1;

/** The devnet model at seed 1: its manifest, root and component files by root. */
export function devnetModel(): { manifest: Manifest; root: string; objects: Map<string, Uint8Array> } {
  const model = initModel(PRESETS.devnet, 1);
  const objects = new Map<string, Uint8Array>();
  const roots: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(componentFiles(model))) {
    roots[name] = sha256Hex(bytes);
    objects.set(roots[name], bytes);
  }
  const manifest = buildManifest(model.config, roots, {
    origin: { kind: "init", seed: 1 },
    tokenizer_root: "0".repeat(64),
  });
  const bytes = canonicalBytes(manifest);
  objects.set(sha256Hex(bytes), bytes);
  return { manifest, root: sha256Hex(bytes), objects };
}

/** Batches of one row of 8 tokens. */
export function batches(n: number): Batch[] {
  return Array.from({ length: n }, (_, k) => ({
    input_ids: [[1, 2, 3, 4, 5, 6, 7, 8].map((x) => x + 10 * k)],
    labels: [[2, 3, 4, 5, 6, 7, 8, -100].map((x) => (x < 0 ? x : x + 10 * k))],
  }));
}

/** One genesis validator of a `Net` (1,000,000 atoms bonded, power 4). */
export interface NetValidator {
  readonly owner: AccountKey;
  readonly key: ConsensusKey;
}

/** Options of a `Net`. */
export interface NetOptions {
  readonly batches?: number;
  readonly lr?: number;
  readonly params?: JsonObject;
  /** The genesis `codec` field (default null). */
  readonly codec?: JsonValue;
  /** Genesis validators (default: owners[0] and owners[1] with cons[0] and cons[1]). */
  readonly validators?: readonly NetValidator[];
  /** Balance of each validator owner when `validators` is given (default 0). */
  readonly ownerBalance?: number;
  /** Consensus params over the defaults (epoch 1000 blocks, 8 MiB blocks, 200 ms). */
  readonly consensus?: JsonObject;
  /** A genesis data section: the chain trains on activated cohorts and lists no training batches. */
  readonly data?: JsonObject;
  /** The state file (default ":memory:"); a file lets a test read the chain again after closing it. */
  readonly path?: string;
  /** Test hooks of the app (e.g. `afterTransactions` to move the serving root). */
  readonly app?: AppOptions;
}

/** A ledger with training, plus everything a test needs to drive it. */
export class Net {
  readonly app: LedgerApp;
  readonly model = devnetModel();
  readonly batches: Batch[];
  /** Every object ever computed, by root (a stand-in for the actors' object stores). */
  readonly objects: Map<string, Uint8Array>;
  /** The genesis document the ledger was opened with. */
  readonly genesis: JsonObject;

  /** The validators: their owners and consensus keys (they all attest every block). */
  readonly validators: readonly NetValidator[];

  constructor(opts: NetOptions = {}) {
    this.batches = opts.data ? [] : batches(opts.batches ?? 2);
    this.objects = new Map(this.model.objects);
    this.validators = opts.validators ?? [0, 1].map((i) => ({ owner: owners[i]!, key: cons[i]! }));
    const funded = [sponsor, challenger, stranger, ...workers].map((k) => ({
      id: k.accountId,
      balance: 100_000_000,
    }));
    const validatorOwners = [...new Set(this.validators.map((v) => v.owner.accountId))];
    const ownerAccounts = opts.validators
      ? validatorOwners.map((id) => ({ id, balance: opts.ownerBalance ?? 0 }))
      : [{ id: owners[0]!.accountId, balance: 0 }];
    const genesis: JsonObject = {
      chain_id: CHAIN,
      genesis_time: T0,
      params: { ...DEVNET_PARAMS, ...opts.params },
      consensus: {
        epoch_blocks: 1000,
        max_block_bytes: 8 * 1024 * 1024,
        block_interval_ms: 200,
        ...opts.consensus,
      },
      accounts: [...funded, ...ownerAccounts],
      validators: this.validators.map((v) => ({
        owner: v.owner.accountId,
        consensus_key: v.key.publicKey,
        amount: 1_000_000,
      })),
      model: { manifest: this.model.manifest as unknown as JsonValue, root: this.model.root },
      codec: opts.codec ?? null,
      vectors: conformanceVectors(),
      training: {
        learning_rate: toHexFloat(opts.lr ?? LR),
        clip: toHexFloat(CLIP),
        batches: this.batches as unknown as JsonValue,
      },
      ...(opts.data ? { data: opts.data } : {}),
    };
    this.genesis = genesis;
    this.app = LedgerApp.open(opts.path ?? ":memory:", genesis, opts.app);
  }

  /** The next block's height. */
  get height(): number {
    return this.app.info().height + 1;
  }

  /** A signed training transaction from `key` with its next nonce. */
  tx(key: AccountKey, kind: string, fields: JsonObject, nonceOffset = 0): Envelope {
    const nonce = this.balance(key).nonce + nonceOffset;
    return signBody({ kind, chain_id: CHAIN, nonce, ...fields } as TxBody, key);
  }

  /** Account balance and nonce. */
  balance(key: AccountKey | string): { balance: number; nonce: number } {
    const idOf = typeof key === "string" ? key : key.accountId;
    const a = this.app.query(`/account/${idOf}`) as { balance: number; nonce: number };
    return { balance: a.balance, nonce: a.nonce };
  }

  #block(txs: Envelope[]) {
    const head = this.app.info();
    return {
      chain_id: CHAIN,
      height: head.height + 1,
      time: head.time + 1000,
      prev_app_hash: head.app_hash,
      last_commit: head.height === 0 ? [] : attest(this.app, this.validators.map((v) => v.key)),
      txs,
    };
  }

  /** Commits a block of `txs` (attested by both validators) and returns the results. */
  block(...txs: Envelope[]): TxResult[] {
    const r = this.app.finalizeBlock(this.#block(txs));
    this.app.commit();
    return r.results;
  }

  /** Commits a block whose txs must all be accepted. */
  ok(...txs: Envelope[]): void {
    const results = this.block(...txs);
    results.forEach((r, i) =>
      assert.deepEqual(r, { ok: true }, `tx ${i} (${txs[i]!.body.kind}) was rejected`)
    );
  }

  /** Commits empty blocks until the next block's height is `h`. */
  until(h: number): void {
    while (this.height < h) this.block();
  }

  /**
   * Asserts that `tx` is rejected with `code` and changes nothing: the block holding it has exactly the app
   * hash of an empty block at the same height. Commits that block. Returns the message.
   */
  rejects(envelope: Envelope, code: string): string {
    const empty = this.app.finalizeBlock(this.#block([])).app_hash;
    const r = this.app.finalizeBlock(this.#block([envelope]));
    const res = r.results[0]!;
    assert.equal(res.ok, false, `expected ${code}, the tx was accepted`);
    assert.equal(!res.ok && res.code, code, !res.ok ? res.message : "");
    assert.equal(r.app_hash, empty, "a rejected transaction changed the state");
    this.app.commit();
    return !res.ok ? res.message : "";
  }

  /** The training lifecycle answer. */
  lifecycle(): JsonObject {
    return this.app.query("/lifecycle") as JsonObject;
  }

  /** The txid of an envelope. */
  id(e: Envelope): string {
    return txid(e);
  }

  /** Money totals. */
  totals(): { issued: number; burned: number } {
    return this.app.store.get("totals", "supply") as { issued: number; burned: number };
  }
}
