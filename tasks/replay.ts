/**
 * `deno task replay --journal FILE`: re-runs the workflow machines over a journal's recorded events, checks
 * every recorded state hash, and prints the first divergence (instance, event index, event, the paths that
 * differ, expected and actual state). Exits 0 when the journal replays cleanly, 1 on a divergence, 2 on a usage mistake.
 */
import { canonical } from "../core/canonical.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { loadMachines } from "../actors/runtime/machine_modules.ts";
import { MACHINES } from "../workflows/registry.ts";
import { divergenceJson, formatDivergence, replayJournal } from "../actors/runtime/replay.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task replay --journal FILE [options]
       deno task replay FILE [options]

Replay every workflow instance of an actor journal through its pure machine and check each recorded
state hash. The first divergence is printed with the instance, the event index, the event, the paths
at which the expected (recorded) and actual (recomputed) states differ, then both states whole and
their hashes.

Options:
  --journal FILE      the journal.sqlite of an actor (opened read-only)
  --machines MODULE   also take machines from MODULE (a .ts file exporting machines); may repeat.
                      By default the machines of workflows/registry.ts are used.
  --json              print one canonical JSON document instead of text
  -h, --help          show this help

Exit status: 0 replay passed, 1 divergence or unreadable journal, 2 usage error.`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    journal: { type: "string" },
    machines: { type: "string", multiple: true },
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
  const path = required(journalPath, "journal");
  const machines = [...Object.values(MACHINES), ...await loadMachines(values.machines ?? [])];
  const journal = Journal.open(path, { readOnly: true });
  let report;
  try {
    report = replayJournal(journal, machines);
  } finally {
    journal.close();
  }
  if (values.json) {
    console.log(canonical(
      report.ok
        ? {
          ok: true,
          instances: report.value.map((i) => ({
            instance: i.instance,
            machine: i.machine,
            machine_version: i.machineVersion,
            events: i.events,
            state_hash: i.stateHash,
          })),
        }
        : { ok: false, divergence: divergenceJson(report.divergence) },
    ));
  } else if (report.ok) {
    for (const i of report.value) {
      console.log(
        `ok ${i.instance} ${i.machine} v${i.machineVersion}: ${i.events} events, state ${i.stateHash}`,
      );
    }
    const events = report.value.reduce((n, i) => n + i.events, 0);
    console.log(`Replay passed: ${report.value.length} instances, ${events} events`);
  } else {
    console.log(formatDivergence(report.divergence));
  }
  if (!report.ok) Deno.exit(1);
}

if (import.meta.main) runTask("replay", main);
