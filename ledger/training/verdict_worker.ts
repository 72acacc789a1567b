/**
 * The Worker thread of `verdict_ahead.ts`: opens the node's committed state read-only, finds the training job
 * of the claim, checks that its live challenge still has the key it was asked for, runs `refereeVerdict` on
 * the sealed bytes exactly as the `resolve` handler would, and posts `{key, verdict}` (verdict null when the
 * state moved on or the replay threw).
 */
/// <reference lib="deno.worker" />
import { DatabaseSync } from "node:sqlite";
import type { JsonValue } from "../../core/canonical.ts";
import type { Challenge } from "../../workflows/_claim.ts";
import type { KvReader } from "../state/overlay.ts";
import { refereeVerdict } from "./dispute.ts";
import { TrainingView } from "./store.ts";
import { verdictKey } from "./verdict_ahead.ts";

/** A read-only `KvReader` over the `state` table of a validator's state file. */
class ReadOnlyState implements KvReader {
  readonly #db: DatabaseSync;
  constructor(path: string) {
    this.#db = new DatabaseSync(path, { readOnly: true });
  }
  get(table: string, key: string): JsonValue | null {
    const row = this.#db.prepare("SELECT value FROM state WHERE tbl = ? AND key = ?").get(table, key) as
      | { value: string }
      | undefined;
    return row === undefined ? null : JSON.parse(row.value);
  }
  scan(table: string): [string, JsonValue][] {
    const rows = this.#db.prepare("SELECT key, value FROM state WHERE tbl = ? ORDER BY key").all(table) as {
      key: string;
      value: string;
    }[];
    return rows.map((r) => [r.key, JSON.parse(r.value)]);
  }
  close(): void {
    this.#db.close();
  }
}

self.onmessage = (e: MessageEvent<{ statePath: string; claimId: string; key: string }>) => {
  const { statePath, claimId, key } = e.data;
  let state: ReadOnlyState | null = null;
  try {
    state = new ReadOnlyState(statePath);
    const t = new TrainingView(state);
    const job = t.jobOfClaim(claimId);
    const c = (job?.state as { claim?: { challenge: Challenge | null } } | undefined)?.claim?.challenge ??
      null;
    if (job === null || job.kind !== "training" || c === null || verdictKey(claimId, c) !== key) {
      self.postMessage({ key, verdict: null });
      return;
    }
    self.postMessage({ key, verdict: refereeVerdict(t, job, c) });
  } catch {
    self.postMessage({ key, verdict: null });
  } finally {
    state?.close();
  }
};
