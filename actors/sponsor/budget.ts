/**
 * The sponsor's attempt budget (ARCHITECTURE "Actors"): a file in the home, `budget.json`, holding the budget
 * fixed when the file was created and every attempt charged against it. An attempt is charged — written,
 * fsynced and renamed into place — before its `reserve` is signed, so a crash can only lose an attempt, never
 * give one back, and a restart (whatever `--budget` says) cannot replenish it. An attempt's outcome is
 * written when the chain decided it; an attempt without one is the current attempt, resumed after a restart.
 *
 * @example
 * ```ts
 * import { Budget } from "./budget.ts";
 * const b = await Budget.open("/tmp/sponsor/budget.json", 8);
 * const a = b.current() ?? await b.charge({ parent: "p".repeat(64), round: 0, workers: [] });
 * await b.finish(a.n, { outcome: "settled", claim_id: "c".repeat(64), loss: "0x1p+0", reason: null });
 * ```
 */
import { canonical, type JsonObject, parseJson } from "../../core/canonical.ts";
import { ProtocolError } from "../../core/errors.ts";

/** How an attempt ended. */
export interface AttemptOutcome extends JsonObject {
  outcome: "settled" | "failed";
  claim_id: string | null;
  loss: string | null;
  reason: string | null;
}

/** One charged attempt. */
export interface Attempt extends JsonObject {
  n: number;
  parent: string;
  round: number;
  /** Worker account ids, stage order. */
  workers: string[];
  end: AttemptOutcome | null;
}

interface BudgetDoc extends JsonObject {
  budget: number;
  attempts: Attempt[];
}

/** The budget file. */
export class Budget {
  private constructor(readonly path: string, private doc: BudgetDoc) {}

  /** Opens the file, creating it with `budget` attempts when missing (an existing file keeps its own). */
  static async open(path: string, budget: number): Promise<Budget> {
    try {
      const doc = parseJson(await Deno.readTextFile(path)) as unknown as BudgetDoc;
      if (!Number.isSafeInteger(doc.budget) || !Array.isArray(doc.attempts)) {
        throw new ProtocolError("invalid_value", `Cannot read budget file ${path}: not {budget, attempts}`);
      }
      return new Budget(path, doc);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    if (!Number.isSafeInteger(budget) || budget < 1) {
      throw new ProtocolError("bad_request", `Cannot create budget file ${path}: budget is ${budget}`);
    }
    const b = new Budget(path, { budget, attempts: [] });
    await b.write();
    return b;
  }

  /** The budget fixed at creation. */
  get total(): number {
    return this.doc.budget;
  }

  /** Attempts charged so far. */
  get spent(): number {
    return this.doc.attempts.length;
  }

  /** Every attempt, oldest first. */
  attempts(): readonly Attempt[] {
    return this.doc.attempts;
  }

  /** Attempts that settled. */
  settled(): number {
    return this.doc.attempts.filter((a) => a.end?.outcome === "settled").length;
  }

  /** The attempt without an outcome, or null. */
  current(): Attempt | null {
    const last = this.doc.attempts.at(-1);
    return last !== undefined && last.end === null ? last : null;
  }

  /** Charges a new attempt durably; `budget_exhausted` when none is left, `busy` when one is open. */
  async charge(what: { parent: string; round: number; workers: string[] }): Promise<Attempt> {
    if (this.current() !== null) {
      throw new ProtocolError("busy", `Cannot charge an attempt: attempt ${this.current()!.n} is open`);
    }
    if (this.spent >= this.total) {
      throw new ProtocolError(
        "budget_exhausted",
        `Cannot charge an attempt: ${this.spent} of ${this.total} attempts are spent`,
      );
    }
    const a: Attempt = { n: this.spent, ...what, end: null };
    this.doc = { ...this.doc, attempts: [...this.doc.attempts, a] };
    await this.write();
    return a;
  }

  /** Records how attempt `n` ended. */
  async finish(n: number, end: AttemptOutcome): Promise<void> {
    this.doc = {
      ...this.doc,
      attempts: this.doc.attempts.map((a) => (a.n === n ? { ...a, end } : a)),
    };
    await this.write();
  }

  private async write(): Promise<void> {
    const tmp = `${this.path}.tmp-${crypto.randomUUID()}`;
    const f = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
    try {
      await f.write(new TextEncoder().encode(canonical(this.doc) + "\n"));
      await f.sync();
    } finally {
      f.close();
    }
    await Deno.rename(tmp, this.path);
    const dir = await Deno.open(
      this.path.includes("/") ? this.path.slice(0, this.path.lastIndexOf("/")) : ".",
    );
    try {
      await dir.sync();
    } catch {
      /* some file systems refuse fsync on a directory */
    } finally {
      dir.close();
    }
  }
}
