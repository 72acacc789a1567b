/**
 * Test helpers for an actor's workflow journal: runs `deno task replay` as a real process, and alters one
 * recorded event in a copy of a journal.
 */
import { DatabaseSync } from "node:sqlite";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** Runs `deno task replay --journal FILE --json` and returns its exit code and parsed output. */
export async function replayJournalProcess(
  file: string,
): Promise<{ code: number; report: Record<string, unknown>; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "replay", "--journal", file, "--json"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  return {
    code: out.code,
    report: text === "" ? {} : JSON.parse(text),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** Every recorded event of `instance` (event, env, state), oldest first, read directly from the database. */
export function journalEvents(file: string, instance: string): { event: string; state: string }[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare("SELECT event, state FROM events WHERE instance = ? ORDER BY seq").all(
      instance,
    ) as never;
  } finally {
    db.close();
  }
}

/** Copies journal `file` (checkpointed) and rewrites event `seq` of `instance` with `edit`; returns the copy. */
export function alteredCopy(
  file: string,
  instance: string,
  seq: number,
  edit: (event: Record<string, unknown>) => Record<string, unknown>,
): string {
  const copy = Deno.makeTempFileSync({ suffix: ".sqlite" });
  // Not `VACUUM INTO`: Deno's node:sqlite refuses ATTACH (and so VACUUM INTO) without --allow-all. Fold the
  // WAL into the main file, then copy the file and any WAL that remains (SQLite replays it on open).
  const src = new DatabaseSync(file);
  try {
    src.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    src.close();
  }
  Deno.copyFileSync(file, copy);
  try {
    Deno.copyFileSync(`${file}-wal`, `${copy}-wal`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const db = new DatabaseSync(copy);
  try {
    const row = db.prepare("SELECT event FROM events WHERE instance = ? AND seq = ?").get(instance, seq) as {
      event: string;
    };
    const changed = JSON.stringify(edit(JSON.parse(row.event)));
    db.prepare("UPDATE events SET event = ? WHERE instance = ? AND seq = ?").run(changed, instance, seq);
  } finally {
    db.close();
  }
  return copy;
}
