/** `deno task sponsor`: run the Sponsor actor (actors/sponsor/sponsor.ts) for N settled steps. */
import { canonical } from "../core/canonical.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { openHome } from "../actors/common/home.ts";
import { readWorkersFile, WorkerClient } from "../actors/common/worker_client.ts";
import { Sponsor, type SponsorEvent } from "../actors/sponsor/sponsor.ts";
import { growOnce } from "../actors/sponsor/grow.ts";
import { integerOption, parse, required, runTask } from "./_cli.ts";

const HELP = `deno task sponsor --home DIR --rpc URL --workers FILE [--steps N] [--budget N] [--json]
deno task sponsor --home DIR --rpc URL --workers FILE --grow N [--json]

Run a Sponsor: for each training step it charges an attempt in DIR/budget.json (durably, before reserving:
a restart cannot replenish it), waits for the ledger to be free, reserves, places the model on the workers
by capacity, drives forward, head, backward, norms, scale and update across them, claims with the record,
metadata and signed receipts, answers availability challenges, and watches the claim until it settles.
Every signed transaction is journaled (exact bytes and hash) in DIR/journal.sqlite before it is sent.
Killed at any moment and restarted, it continues the same step and never reserves or claims twice.

Prints one line per phase: "step <round> <phase> height=<h> loss=<loss>" (or one JSON object with --json),
and "done <settled> settled, <spent>/<budget> attempts" at the end.

With --grow N it grows the learning model by N identity blocks instead (PROTOCOL §5.3), as the epoch
controller does: the grown manifest from the parent manifest and the bytes of the parent's last block (fetched
from a worker), the identity block put on every worker, a "grow" transaction with the workers file's
capacities (journaled like every other under "grow:<training round>", so a restart never grows twice), then it
waits until the chain decides the growth and prints "grown <claim id> <status> parameters=+<n>" (or one JSON
object with "event":"grown"). Exit 1 unless settled (a grown model that does not fit is "skipped").

Options:
  --home DIR        sponsor directory (account.key created if missing; fund the account before reserving)
  --rpc URL         a validator's RPC URL (http://127.0.0.1:PORT)
  --workers FILE    JSON array of {url, token | token_file, capacity?} in stage order
  --steps N         settled steps to reach, counted over every run of this home (default 1)
  --budget N        attempts in a new budget file (default 2*steps+2; an existing file keeps its own)
  --grow N          grow by N identity blocks (1-16) instead of training
  --poll-ms N       pause between chain polls (default 300)
  --json            machine-readable events, one JSON object per line
  -h, --help        show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    rpc: { type: "string" },
    workers: { type: "string" },
    steps: { type: "string" },
    budget: { type: "string" },
    "poll-ms": { type: "string" },
    grow: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const homeDir = required(values.home, "home");
  const rpc = required(values.rpc, "rpc");
  const workersFile = required(values.workers, "workers");
  const steps = integerOption(values.steps, "steps", { fallback: 1 });
  const budget = integerOption(values.budget, "budget", { fallback: 2 * steps + 2 });
  const pollMs = integerOption(values["poll-ms"], "poll-ms", { fallback: 300 });
  const entries = await readWorkersFile(workersFile);
  const home = await openHome(homeDir);
  if (values.grow !== undefined) {
    const added = integerOption(values.grow, "grow", { fallback: 1, min: 1, max: 16 });
    const g = await growOnce({
      home,
      chain: new ChainClient(rpc),
      workers: entries.map((e) => new WorkerClient(e.url, e.token)),
      entries,
      added,
      emit: (e) => values.json ? console.log(canonical(e)) : console.log(`grow: ${e.phase}`),
      pollMs,
    });
    console.log(
      values.json
        ? canonical({ event: "grown", ...g })
        : `grown ${g.claim_id} ${g.status}${
          g.reason ? `: ${g.reason}` : ""
        } parameters=+${g.added_parameters}`,
    );
    home.journal.close();
    if (g.status !== "settled") {
      throw new Error(
        `Cannot grow: the growth ${g.claim_id} is ${g.status}${g.reason ? `: ${g.reason}` : ""}`,
      );
    }
    return;
  }
  const emit = values.json
    ? (e: SponsorEvent) => console.log(canonical(e))
    : (e: SponsorEvent) =>
      console.log(`step ${e.step} ${e.phase} height=${e.height}${e.loss === null ? "" : ` loss=${e.loss}`}`);
  console.log(
    values.json
      ? canonical({ event: "account", account: home.key.accountId })
      : `account ${home.key.accountId}`,
  );
  const sponsor = await Sponsor.open({
    home,
    chain: new ChainClient(rpc),
    workers: entries.map((e) => new WorkerClient(e.url, e.token)),
    entries,
    steps,
    budget,
    emit,
    pollMs,
  });
  const attempts = await sponsor.run();
  const settled = attempts.filter((a) => a.end?.outcome === "settled").length;
  console.log(
    values.json
      ? canonical({ event: "done", settled, spent: sponsor.budget.spent, budget: sponsor.budget.total })
      : `done ${settled} settled, ${sponsor.budget.spent}/${sponsor.budget.total} attempts`,
  );
  home.journal.close();
}

if (import.meta.main) await runTask("sponsor", main);
