import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { finalTotals } from "../../devnet/summary.ts";

function writeState(home: string, rows: [string, string, unknown][]): void {
  Deno.mkdirSync(home, { recursive: true });
  const db = new DatabaseSync(`${home}/state.sqlite`);
  db.exec(
    "CREATE TABLE IF NOT EXISTS state (tbl TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tbl, key)) WITHOUT ROWID",
  );
  db.exec("DELETE FROM state");
  const put = db.prepare("INSERT INTO state (tbl, key, value) VALUES (?, ?, ?)");
  for (const [tbl, key, value] of rows) put.run(tbl, key, JSON.stringify(value));
  db.close();
}

Deno.test("the summary's conservation is recomputed over the whole final state: balances, bonds and escrows against supply, issued and burned", () => {
  const tmp = Deno.makeTempDirSync();
  try {
    const rows: [string, string, unknown][] = [
      ["account", "a", { balance: 60, nonce: 3 }],
      ["account", "b", { balance: 10, nonce: 0 }],
      ["validator", "v", { amount: 20, state: { status: "active" } }],
      ["training_job", "j", { escrow: 9 }],
      ["evaluation_score", "s", { escrow: 6 }],
      ["totals", "supply", { genesis_supply: 100, issued: 10, burned: 5 }],
    ];
    writeState(tmp, rows);
    assertEquals(finalTotals(tmp), { issued: 10, burned: 5, conserved: true });
    // One atom more in an account than the supply allows.
    writeState(tmp, rows.map((r) => r[1] === "b" ? ["account", "b", { balance: 11, nonce: 0 }] : r));
    assertEquals(finalTotals(tmp), { issued: 10, burned: 5, conserved: false });
    // A score's escrow that the scan would miss would show the same way.
    writeState(tmp, rows.filter((r) => r[0] !== "evaluation_score"));
    assertEquals(finalTotals(tmp).conserved, false);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
