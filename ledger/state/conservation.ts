/**
 * The conservation invariant (PROTOCOL §3), checked after every block:
 * `genesis supply + issued = Σ balances + Σ validator bonds + Σ escrows + burned`.
 *
 * The sums of the committed state are computed once by a full scan; after each block they are moved by the
 * difference between every changed value and the committed value it replaces, then the invariant is checked.
 * A broken invariant throws with both sides printed, and the block is not committed.
 */
import type { JsonValue } from "../../core/canonical.ts";
import type { KvReader, Overlay } from "./overlay.ts";
import type { Account, Totals, ValidatorRecord } from "./accessors.ts";

/** Both sides of the invariant, by part. */
export interface MoneySums {
  readonly genesis_supply: number;
  readonly issued: number;
  readonly balances: number;
  readonly bonds: number;
  readonly escrows: number;
  readonly burned: number;
}

/** Tables holding escrowed atoms, with how many atoms a stored value holds. Later lifecycles add theirs. */
export const ESCROW_TABLES: Record<string, (value: JsonValue) => number> = {
  verifier_pool: (v) => v as number,
  // Reservation, claim and challenge bonds of training steps and growths (ledger/training/store.ts).
  training_job: (v) => (v as { escrow: number }).escrow,
  // Requesters' max_price and pending responses' provider bonds (ledger/inference/store.ts).
  inference_job: (v) => (v as { escrow: number }).escrow,
  // Proposal bonds of data proposals until they activate or expire (ledger/data/store.ts).
  data_proposal: (v) => (v as { escrow: number }).escrow,
  // Claim and challenge bonds of live score claims (ledger/evaluation/store.ts).
  evaluation_score: (v) => (v as { escrow: number }).escrow,
};

const ZERO: MoneySums = { genesis_supply: 0, issued: 0, balances: 0, bonds: 0, escrows: 0, burned: 0 };

function part(table: string, value: JsonValue | null): Partial<Record<keyof MoneySums, number>> {
  if (value === null) return {};
  if (table === "account") return { balances: (value as unknown as Account).balance };
  if (table === "validator") {
    const v = value as unknown as ValidatorRecord;
    return { bonds: v.state.status === "withdrawn" ? 0 : v.amount };
  }
  if (table === "totals") {
    const t = value as unknown as Totals;
    return { genesis_supply: t.genesis_supply, issued: t.issued, burned: t.burned };
  }
  const escrow = ESCROW_TABLES[table];
  return escrow ? { escrows: escrow(value) } : {};
}

function add(s: MoneySums, p: Partial<Record<keyof MoneySums, number>>, sign: 1 | -1): MoneySums {
  const out = { ...s } as Record<keyof MoneySums, number>;
  for (const [k, v] of Object.entries(p) as [keyof MoneySums, number][]) out[k] += sign * v;
  return out;
}

/** The sums of a whole state, by full scan. */
export function scanSums(reader: KvReader): MoneySums {
  let s = ZERO;
  for (const table of ["account", "validator", "totals", ...Object.keys(ESCROW_TABLES)]) {
    for (const [, value] of reader.scan(table)) s = add(s, part(table, value), 1);
  }
  return s;
}

/** The sums after applying `block` (an overlay whose parent is the state `before` describes). */
export function blockSums(before: MoneySums, block: Overlay): MoneySums {
  let s = before;
  for (const [table, key, value] of block.changes()) {
    s = add(s, part(table, block.parent.get(table, key)), -1);
    s = add(s, part(table, value), 1);
  }
  return s;
}

/** Throws when the invariant does not hold, printing both sides and their parts. */
export function assertConserved(s: MoneySums, height: number): void {
  const left = s.genesis_supply + s.issued;
  const right = s.balances + s.bonds + s.escrows + s.burned;
  const safe = [left, right, ...Object.values(s)].every((n) => Number.isSafeInteger(n) && n >= 0);
  if (left !== right || !safe) {
    throw new Error(
      `Cannot commit block ${height}: conservation broken, genesis supply ${s.genesis_supply} + issued ${s.issued}` +
        ` = ${left} but balances ${s.balances} + bonds ${s.bonds} + escrows ${s.escrows} + burned ${s.burned}` +
        ` = ${right}`,
    );
  }
}
