/**
 * `deno task journal --journal FILE`: lists an actor journal's operations, workflow events and submissions,
 * or one operation in full (`--op ID`), as text for a person or canonical JSON for a script (`--json`).
 */
import { canonical } from "../core/canonical.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { describeJournal, formatJournal } from "../actors/runtime/journal_view.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task journal --journal FILE [options]
       deno task journal FILE [options]

List what an actor journal holds: operations (id, handler, status, result), workflow instances with
their events (event, outcome, state and state hash), and transaction submissions (intent, hash, outcome).

Options:
  --journal FILE   the journal.sqlite of an actor (opened read-only)
  --op ID          show one operation in full: input, result, steps and the events it recorded
  --json           print one canonical JSON document instead of text
  -h, --help       show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    journal: { type: "string" },
    op: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > (values.journal === undefined ? 1 : 0)) {
    throw new UsageError(`unexpected argument ${positionals.at(-1)}`);
  }
  const journalPath = values.journal ?? positionals[0];
  const journal = Journal.open(required(journalPath, "journal"), { readOnly: true });
  try {
    const doc = describeJournal(journal, values.op === undefined ? {} : { op: values.op });
    console.log(values.json ? canonical(doc) : formatJournal(doc));
  } finally {
    journal.close();
  }
  await Promise.resolve();
}

if (import.meta.main) runTask("journal", main);
