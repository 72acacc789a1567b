/**
 * A small real chain for explorer tests: a file-backed ledger (real SQLite) on the ledger test genesis with
 * an accepted transfer, a transaction whose kind is markup (rejected, but committed in its block, so the
 * explorer must escape it), a transfer with a stale nonce, and an empty block.
 */
import type { JsonValue } from "../../core/canonical.ts";
import { LedgerApp } from "../../ledger/app.ts";
import { rawHash } from "../../ledger/envelope.ts";
import { rawOf } from "../../ledger/app.ts";
import { alice, bob, run, testGenesis, tx } from "../ledger/_fixture.ts";

/** The markup a hostile transaction carries in its kind. */
export const HOSTILE = `<img src=x onerror="alert(1)">`;

/** What the chain holds. */
export interface SmallChain {
  readonly path: string;
  readonly height: number;
  readonly transfer: string;
  readonly hostile: string;
  readonly stale: string;
}

/** Writes the chain into `dir/state.sqlite` and closes it. */
export function buildSmallChain(dir: string): SmallChain {
  const path = `${dir}/state.sqlite`;
  const app = LedgerApp.open(path, testGenesis());
  const transfer = tx(alice, "transfer", 0, { to: bob.accountId, amount: 1_000 });
  const hostile = tx(alice, HOSTILE, 1, {});
  const stale = tx(alice, "transfer", 0, { to: bob.accountId, amount: 5 });
  run(app, [transfer as unknown as JsonValue]);
  const r = run(app, [hostile as unknown as JsonValue, stale as unknown as JsonValue]);
  if (r.results.some((x) => x.ok)) {
    throw new Error("the hostile and stale transactions were expected to fail");
  }
  run(app, []);
  app.close();
  return {
    path,
    height: 3,
    transfer: rawHash(rawOf(transfer)),
    hostile: rawHash(rawOf(hostile)),
    stale: rawHash(rawOf(stale)),
  };
}
