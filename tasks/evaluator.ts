/** `deno task evaluator`: run the Evaluator actor (actors/evaluator/evaluator.ts) to one decision. */
import { canonical, type JsonObject } from "../core/canonical.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { checkKernelsAgainstChain } from "../actors/common/kernel_check.ts";
import { openHome } from "../actors/common/home.ts";
import { readWorkersFile, WorkerClient } from "../actors/common/worker_client.ts";
import { Evaluator, type EvaluatorEvent } from "../actors/evaluator/evaluator.ts";
import { integerOption, parse, required, runTask } from "./_cli.ts";

const HELP = `deno task evaluator --home DIR --rpc URL --workers FILE [--poll-ms N] [--json]

Run an Evaluator: waits until the latest data cohort's scheduled steps have all settled, opens its
evaluation (baseline = serving root, candidate = learning root), scores every window of the four groups
(baseline and candidate x retention and fresh, 4 windows per score) with forward-only sessions on the
workers, submits each score claim (a bonded claim that mints nothing), answers availability challenges
against its scores, retries a refuted window on rotated workers, and finishes the evaluation once every
window has settled. Every signed transaction is journaled (exact bytes and hash) in DIR/journal.sqlite
before it is sent; killed and restarted, it continues and never signs a second transaction for the same
purpose. Fund DIR's account for fees and the claim bond of one score per group.

Prints one line per event ("<event> <evaluation> <detail>", or one JSON object with --json), then the
decision: per group the paired mean change, S, Q, G and pass/fail, and whether the serving root moved.

Options:
  --home DIR        evaluator directory (account.key created if missing)
  --rpc URL         a validator's RPC URL (http://127.0.0.1:PORT)
  --workers FILE    JSON array of {url, token | token_file, capacity?}
  --poll-ms N       pause between chain polls (default 300)
  --json            machine-readable events, one JSON object per line
  -h, --help        show this help`;

/** The decision's lines: one per role, then the serving root. */
export function decisionLines(e: JsonObject): string[] {
  const d = e.decision as JsonObject;
  const gate = (d.gate ?? {}) as Record<string, JsonObject | null>;
  const lines = ["retention", "fresh"].map((role) => {
    const g = gate[role];
    return g === null || g === undefined
      ? `${role}: no gate (${d.reason})`
      : `${role}: mean change ${g.mean_change_micronats} micronats, S=${g.S} Q=${g.Q} G=${g.G} ${
        g.pass ? "pass" : "fail"
      }`;
  });
  lines.push(d.promoted ? `serving root moved to ${e.candidate}` : `serving root stays ${e.baseline}`);
  return lines;
}

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    rpc: { type: "string" },
    workers: { type: "string" },
    "poll-ms": { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const homeDir = required(values.home, "home");
  const rpc = required(values.rpc, "rpc");
  const workersFile = required(values.workers, "workers");
  const pollMs = integerOption(values["poll-ms"], "poll-ms", { fallback: 300 });
  const entries = await readWorkersFile(workersFile);
  const chain = new ChainClient(rpc);
  await checkKernelsAgainstChain(chain); // PROTOCOL §10.6: refuse to start on kernels that differ
  const home = await openHome(homeDir);
  const emit = values.json
    ? (e: EvaluatorEvent) => console.log(canonical(e))
    : (e: EvaluatorEvent) => console.log(`${e.event} ${e.evaluation ?? "-"} ${e.detail}`);
  console.log(
    values.json
      ? canonical({ event: "account", account: home.key.accountId })
      : `account ${home.key.accountId}`,
  );
  const evaluator = await Evaluator.open({
    home,
    chain,
    workers: entries.map((e) => new WorkerClient(e.url, e.token)),
    entries,
    emit,
    pollMs,
  });
  const e = await evaluator.run();
  if (values.json) console.log(canonical({ event: "decision", evaluation: e }));
  else for (const line of decisionLines(e)) console.log(line);
  home.journal.close();
}

if (import.meta.main) await runTask("evaluator", main);
