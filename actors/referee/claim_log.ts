/**
 * The referee's durable record of what it has seen, kept in its journal file: the last block height it
 * scanned and every claim found in a block, with the number of stages and the outcome once decided. The
 * claims of a block and the new scan height are written in one transaction, so a crash never skips a block
 * and never records a claim twice.
 *
 * @example
 * ```ts
 * import { ClaimLog } from "./claim_log.ts";
 * // const log = new ClaimLog(journal); log.scanned(); log.recordBlock(12, ["<claim id>"]);
 * ```
 */
import type { JsonValue } from "../../core/canonical.ts";
import { txid } from "../../ledger/envelope.ts";
import type { Journal } from "../runtime/journal.ts";

const TABLES = `
CREATE TABLE IF NOT EXISTS referee_scan(key TEXT PRIMARY KEY, height INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS referee_claims(
  claim_id TEXT PRIMARY KEY, height INTEGER NOT NULL, stages INTEGER, outcome TEXT, detail TEXT);
`;

/** One claim the referee knows. */
export interface ClaimRow {
  readonly claim_id: string;
  /** `training` (a \`claim\` transaction), `growth` (a \`grow\`), `response` (a \`respond\`) or `score`. */
  readonly kind: "training" | "growth" | "response" | "score";
  readonly height: number;
  readonly stages: number | null;
  readonly outcome: string | null;
}

/** A claim found in a block. */
export interface FoundClaim {
  readonly id: string;
  readonly kind: "training" | "growth" | "response" | "score";
}

/** The claims a committed block created (`claim`, `grow`, `respond` and `score` transactions whose result is ok). */
export function claimsOfBlock(
  answer: { block: { txs: JsonValue[] }; results: { ok: boolean }[] },
): FoundClaim[] {
  const found: FoundClaim[] = [];
  answer.block.txs.forEach((tx, i) => {
    const env = tx as { body?: { kind?: string }; public_key: string };
    if (answer.results[i]?.ok !== true) return;
    if (env.body?.kind === "claim") found.push({ id: txid(env as never), kind: "training" });
    if (env.body?.kind === "grow") found.push({ id: txid(env as never), kind: "growth" });
    if (env.body?.kind === "respond") found.push({ id: txid(env as never), kind: "response" });
    if (env.body?.kind === "score") found.push({ id: txid(env as never), kind: "score" });
  });
  return found;
}

/** The scan height and the claims, in the journal's database. */
export class ClaimLog {
  constructor(readonly journal: Journal) {
    journal.db.exec(TABLES);
    const columns = journal.db.prepare("PRAGMA table_info(referee_claims)").all() as { name: string }[];
    if (!columns.some((c) => c.name === "kind")) {
      journal.db.exec("ALTER TABLE referee_claims ADD COLUMN kind TEXT NOT NULL DEFAULT 'training'");
    }
  }

  /** The last scanned height (0 before the first block). */
  scanned(): number {
    const row = this.journal.db.prepare("SELECT height FROM referee_scan WHERE key = 'scan'").get() as
      | { height: number }
      | undefined;
    return row?.height ?? 0;
  }

  /** Every claim seen, oldest first. */
  claims(): ClaimRow[] {
    return this.journal.db.prepare(
      "SELECT claim_id, kind, height, stages, outcome FROM referee_claims ORDER BY height, claim_id",
    ).all() as unknown as ClaimRow[];
  }

  /** Records block `height` as scanned with the claims it created, in one transaction. */
  recordBlock(height: number, claims: readonly FoundClaim[]): void {
    const db = this.journal.db;
    this.journal.transaction(() => {
      for (const c of claims) {
        db.prepare("INSERT OR IGNORE INTO referee_claims(claim_id, kind, height) VALUES (?, ?, ?)")
          .run(c.id, c.kind, height);
      }
      db.prepare("INSERT OR REPLACE INTO referee_scan(key, height) VALUES ('scan', ?)").run(height);
    });
  }

  /** Records a claim's number of stages. */
  setStages(claimId: string, stages: number): void {
    this.journal.db.prepare("UPDATE referee_claims SET stages = ? WHERE claim_id = ?").run(stages, claimId);
  }

  /** Records a claim's outcome (`clean`, `caught`, `missed` or `error`) and why. */
  finish(claimId: string, outcome: string, detail: string): void {
    this.journal.db.prepare("UPDATE referee_claims SET outcome = ?, detail = ? WHERE claim_id = ?")
      .run(outcome, detail, claimId);
  }
}
