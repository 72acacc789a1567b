/**
 * `deno task epoch [run|status|history]`: run an epoch through the epoch controller
 * (`actors/epoch/controller.ts`), resume an interrupted one, and show where epochs stand.
 */
import { canonical } from "../core/canonical.ts";
import { fromHexFloat } from "../core/hex_float.ts";
import { ProtocolError } from "../core/errors.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { findChainSetup } from "../actors/common/chain_setup.ts";
import { openHome } from "../actors/common/home.ts";
import { loadEpochConfig } from "../actors/epoch/config.ts";
import { EpochController, type EpochReport } from "../actors/epoch/controller.ts";
import { epochHistory, type EpochHistoryRow, type EpochStatus, epochStatus } from "../actors/epoch/view.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task epoch [run] --home DIR --rpc URL --config FILE [--json]
       deno task epoch status --home DIR [--json]
       deno task epoch history --home DIR [--json]

Run one epoch through the epoch controller: collect and propose a cohort (the Curator), wait for the
validators to vote it in, train its scheduled steps (the Sponsor), open and complete its evaluation (the
Evaluator), and record the decision. Every transition is journaled in DIR/journal.sqlite before it is acted
on. Killed at any moment, the same command resumes the same epoch from its journal and the chain; once the
last epoch is decided it begins the next one, if the UTC day's budget (config "daily") allows it.
Run \`deno task epoch <command> --help\` for each command.`;

const HELPS: Record<string, string> = {
  run: `deno task epoch [run] --home DIR --rpc URL --config FILE [--json]

Resume the unfinished epoch, or charge the next one against the day's budget and run it to its decision.
Prints a progress line per phase, then the epoch's report (one JSON line with --json; progress then goes to
stderr). Exits 1 with day_budget_spent when the UTC day's epochs or atoms are spent.

Options:
  --home DIR      controller directory: account.key (created if missing; fund it: it pays the proposal,
                  training and evaluation bonds and fees), journal.sqlite, objects/ (must hold the chain's
                  codec), and one folder per role (curator/, epoch-N/sponsor/, evaluator/)
  --rpc URL       a validator's RPC URL (http://127.0.0.1:PORT)
  --config FILE   the epoch config (see docs/OPERATORS.md): {"genesis", "sources", "workers",
                  "collect_rows", "train_documents", "attempts", "epoch_atoms",
                  "daily": {"epochs", "atoms"}, "poll_ms"?}
  --json          print the report as one JSON line
  -h, --help      show this help`,
  status: `deno task epoch status --home DIR [--json]

Show where the latest epoch stands, from the journals alone: its phase, cohort, step i/n, the evaluation's
scores per group, the decision, and the budget charged per UTC day.

Options:
  --home DIR      controller directory
  --json          one JSON object
  -h, --help      show this help`,
  history: `deno task epoch history --home DIR [--json]

List every finished epoch with its cohort, steps, losses, decision and cost (atoms the account spent).

Options:
  --home DIR      controller directory
  --json          one JSON array
  -h, --help      show this help`,
};

async function main(): Promise<void> {
  const args = [...Deno.args];
  const command = args[0] !== undefined && !args[0].startsWith("-") ? args.shift()! : "run";
  if (command === "run" && args.length === 0) return console.log(HELP);
  if (!Object.hasOwn(HELPS, command)) throw new UsageError(`unknown command ${command}`);
  const { values, positionals } = parse(args, {
    home: { type: "string" },
    rpc: { type: "string" },
    config: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(command === "run" && Deno.args[0] !== "run" ? HELP : HELPS[command]);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const homeDir = required(values.home, "home").replace(/\/+$/, "");
  if (command !== "run") {
    for (const o of ["rpc", "config"] as const) {
      if (values[o] !== undefined) throw new UsageError(`--${o} is not an option of ${command}`);
    }
    return show(command, homeDir, values.json === true);
  }
  const rpc = required(values.rpc, "rpc");
  const config = await loadEpochConfig(required(values.config, "config"));
  const chain = new ChainClient(rpc);
  const genesis = await findChainSetup(chain, homeDir, [config.genesis]);
  if (genesis === null) {
    throw new ProtocolError(
      "invalid_config",
      `Cannot run an epoch: genesis ${config.genesis} is not the genesis of the chain at ${rpc}, or has no training section`,
    );
  }
  const home = await openHome(homeDir);
  const say = values.json ? (l: string) => console.error(l) : (l: string) => console.log(l);
  say(`account ${home.key.accountId}`);
  const controller = await EpochController.open({ home, chain, config, genesis, say });
  try {
    const report = await controller.run();
    if (values.json) console.log(canonical(report));
    else console.log(formatReport(report));
  } finally {
    controller.close();
    home.journal.close();
  }
}

function show(command: string, homeDir: string, json: boolean): void {
  const journal = Journal.open(`${homeDir}/journal.sqlite`, { readOnly: true });
  let evaluator: Journal | null = null;
  try {
    evaluator = Journal.open(`${homeDir}/evaluator/journal.sqlite`, { readOnly: true });
  } catch (e) {
    if (!(e instanceof ProtocolError) || e.code !== "not_found") throw e;
  }
  try {
    if (command === "status") {
      const s = epochStatus(journal, evaluator);
      console.log(json ? canonical(s) : formatStatus(s));
    } else {
      const rows = epochHistory(journal);
      console.log(json ? canonical(rows) : formatHistory(rows));
    }
  } finally {
    journal.close();
    evaluator?.close();
  }
}

function decimal(hex: string): string {
  try {
    return fromHexFloat(hex).toFixed(4);
  } catch {
    return hex;
  }
}

function formatReport(r: EpochReport): string {
  const settled = r.steps.filter((s) => s.outcome === "settled");
  return [
    `epoch ${r.epoch}: ${r.outcome} (${r.reason})`,
    `cohort ${r.cohort?.data_root ?? "none"}`,
    `steps ${settled.length} settled of ${r.steps.length} attempts; losses ${
      settled.map((s) => decimal(s.loss ?? "")).join(" ")
    }`,
    r.evaluation === null
      ? "no evaluation"
      : `evaluation ${r.evaluation.evaluation_id}: ${
        r.evaluation.promoted ? "promote" : "keep"
      } (${r.evaluation.reason})`,
    `cost ${r.cost} atoms (charged ${r.charged_atoms} against the day's budget)`,
  ].join("\n");
}

function formatStatus(s: EpochStatus): string {
  if (s.epoch === null) return "no epoch yet";
  const lines = [
    `epoch ${s.epoch}: ${s.phase}${s.running ? " (unfinished: run the same command to resume)" : ""}`,
  ];
  lines.push(`cohort ${s.cohort ?? "none yet"}${s.proposal ? ` (proposal ${s.proposal})` : ""}`);
  if (s.step) lines.push(`step ${s.step.settled}/${s.step.steps}; losses ${s.losses.map(decimal).join(" ")}`);
  if (s.evaluation) {
    const g = Object.entries(s.evaluation.groups).map(([k, v]) => `${k} ${v}`).join(", ");
    lines.push(`evaluation ${s.evaluation.evaluation_id}: scores committed ${g}`);
  }
  if (s.decision) lines.push(`decision ${s.decision.outcome} (${s.decision.reason})`);
  const days = new Map<string, number>();
  for (const c of s.charges) days.set(c.day, (days.get(c.day) ?? 0) + 1);
  for (const [day, n] of days) lines.push(`charged ${n} epoch${n === 1 ? "" : "s"} on ${day}`);
  return lines.join("\n");
}

function formatHistory(rows: EpochHistoryRow[]): string {
  if (rows.length === 0) return "no finished epoch";
  return rows.map((r) =>
    `epoch ${r.epoch}: ${r.outcome}${r.decision ? ` (${r.decision})` : ""}; cohort ${r.cohort ?? "none"}; ` +
    `${r.steps} steps of ${r.attempts} attempts; losses ${r.losses.map(decimal).join(" ")}; ` +
    `cost ${r.cost ?? "?"} atoms; ${r.reason}`
  ).join("\n");
}

if (import.meta.main) await runTask("epoch", main);
