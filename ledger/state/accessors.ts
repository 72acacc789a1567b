/**
 * Typed access to ledger state. `LedgerView` only reads (queries get this); `LedgerWriter` also writes, into
 * an overlay (transaction handlers and block-boundary rules get this). Tables:
 *
 * | table | key | value |
 * |---|---|---|
 * | `account` | account id | `{balance, nonce}` |
 * | `validator` | consensus key | `{owner, consensus_key, amount, state, history}` |
 * | `verifier_pool` | block height (decimal) | atoms of that block's verifier reward, until paid |
 * | `totals` | `supply` | `{genesis_supply, issued, burned}` |
 * | `evidence` | evidence id | `{consensus_key, applied_height, burned}` (ledger/evidence.ts) |
 */
import type { JsonValue } from "../../core/canonical.ts";
import type { ValidatorState } from "../../workflows/validator.ts";
import { hasPower } from "../../workflows/validator.ts";
import type { KvReader, Overlay } from "./overlay.ts";

/** An account's balance and next nonce. */
export interface Account {
  readonly balance: number;
  readonly nonce: number;
}

/** A validator and the history of its voting power (`[from_height, power]`, ascending). */
export interface ValidatorRecord {
  readonly owner: string;
  readonly consensus_key: string;
  readonly amount: number;
  readonly state: ValidatorState;
  readonly history: readonly (readonly [number, number])[];
}

/** The money that is not in accounts, bonds or escrows. */
export interface Totals {
  readonly genesis_supply: number;
  readonly issued: number;
  readonly burned: number;
}

const NO_ACCOUNT: Account = { balance: 0, nonce: 0 };

/** Read-only typed view of ledger state. */
export class LedgerView {
  constructor(protected readonly kv: KvReader) {}

  /** An account (balance 0 and nonce 0 when it has never been written). */
  account(id: string): Account {
    return (this.kv.get("account", id) as Account | null) ?? NO_ACCOUNT;
  }

  /** A validator by consensus key, or null. */
  validator(consensusKey: string): ValidatorRecord | null {
    return this.kv.get("validator", consensusKey) as ValidatorRecord | null;
  }

  /** Every validator ever bonded, sorted by consensus key. */
  validators(): ValidatorRecord[] {
    return this.kv.scan("validator").map(([, v]) => v as unknown as ValidatorRecord);
  }

  /** The money totals. */
  totals(): Totals {
    return (this.kv.get("totals", "supply") as Totals | null) ?? { genesis_supply: 0, issued: 0, burned: 0 };
  }

  /** The unpaid verifier reward of block `height`. */
  verifierPool(height: number): number {
    return (this.kv.get("verifier_pool", String(height)) as number | null) ?? 0;
  }

  /** The record of an applied piece of evidence, or null. */
  evidence(evidenceId: string): JsonValue | null {
    return this.kv.get("evidence", evidenceId);
  }

  /** The power a validator had at `height`: the last history entry at or before it. */
  powerAt(consensusKey: string, height: number): number {
    const v = this.validator(consensusKey);
    let power = 0;
    for (const [from, p] of v?.history ?? []) if (from <= height) power = p;
    return power;
  }

  /** Keys of validators whose current state votes, sorted. */
  activeKeys(): string[] {
    return this.validators().filter((v) => hasPower(v.state)).map((v) => v.consensus_key);
  }
}

/** A writable typed view over an overlay. */
export class LedgerWriter extends LedgerView {
  readonly #overlay: Overlay;

  constructor(overlay: Overlay) {
    super(overlay);
    this.#overlay = overlay;
  }

  /** Replaces an account. */
  setAccount(id: string, account: Account): void {
    this.#overlay.set("account", id, { balance: account.balance, nonce: account.nonce });
  }

  /** Replaces a validator record. */
  setValidator(record: ValidatorRecord): void {
    this.#overlay.set("validator", record.consensus_key, record as unknown as JsonValue);
  }

  /** Records that the evidence `evidenceId` was applied. */
  setEvidence(
    evidenceId: string,
    record: { consensus_key: string; applied_height: number; burned: number },
  ): void {
    this.#overlay.set("evidence", evidenceId, { ...record });
  }

  /** Burns `atoms` that were already taken out of an account, bond or escrow. */
  burn(atoms: number): void {
    const t = this.totals();
    this.#setTotals({ ...t, burned: t.burned + atoms });
  }

  /** Records newly issued atoms (they must be put into an account or escrow in the same block). */
  issue(atoms: number): void {
    const t = this.totals();
    this.#setTotals({ ...t, issued: t.issued + atoms });
  }

  /** Sets the genesis supply (initChain only). */
  setGenesisSupply(atoms: number): void {
    this.#setTotals({ ...this.totals(), genesis_supply: atoms });
  }

  /** Sets the unpaid verifier reward of block `height` (0 deletes it). */
  setVerifierPool(height: number, atoms: number): void {
    this.#overlay.set("verifier_pool", String(height), atoms === 0 ? null : atoms);
  }

  #setTotals(t: Totals): void {
    this.#overlay.set("totals", "supply", {
      genesis_supply: t.genesis_supply,
      issued: t.issued,
      burned: t.burned,
    });
  }
}
