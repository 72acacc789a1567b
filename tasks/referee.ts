/** `deno task referee`: run the Referee actor (actors/referee/referee.ts) until interrupted. */
import { canonical } from "../core/canonical.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { checkKernelsAgainstChain } from "../actors/common/kernel_check.ts";
import { openHome } from "../actors/common/home.ts";
import { readWorkersFile, WorkerClient } from "../actors/common/worker_client.ts";
import { Referee, type RefereeEvent, type RefereeStatus } from "../actors/referee/referee.ts";
import { integerOption, parse, required, runTask } from "./_cli.ts";

const HELP = `deno task referee --home DIR --rpc URL [--workers FILE] [--json] [--once]

Run a Referee: scans every committed block for claims (training steps, growths and inference responses),
fetches each claim's
objects from the workers (or the chain's sealed uploads), replays every stage with the deterministic
kernels (a growth: the grown manifest from the parent's last block; a response: each partition of its
prefill and its head, from the pinned model in DIR/objects) and, on a mismatch, files a
fraud challenge (on a training step naming the first forged block and phase), uploads the objects the
challenge needs (of a training step: that block's only) in 1 MiB chunks, seals them and calls resolve; an object
nobody serves gets an availability challenge. Every check and challenge is journaled in DIR/journal.sqlite.

Prints "account <id>", then one line per claim, verdict, challenge and outcome, and a status line
"status height=<h> scanned=<h> behind_blocks=<n> claims=<n> stages_checked=<n> behind_stages=<n>
challenges=<n>" whenever it changes (one JSON object per line with --json).

Options:
  --home DIR        referee directory (account.key created if missing; fund it for challenge bonds)
  --rpc URL         a validator's RPC URL
  --workers FILE    JSON array of {url, token | token_file} the referee fetches objects from (default
                    none: its own store and the chain's sealed uploads)
  --poll-ms N       pause between passes (default 300)
  --once            one pass, print the status, exit
  --json            machine-readable lines
  -h, --help        show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    rpc: { type: "string" },
    workers: { type: "string" },
    "poll-ms": { type: "string" },
    once: { type: "boolean" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const homeDir = required(values.home, "home");
  const rpc = required(values.rpc, "rpc");
  const workersFile = values.workers;
  const pollMs = integerOption(values["poll-ms"], "poll-ms", { fallback: 300 });
  const entries = workersFile === undefined ? [] : await readWorkersFile(workersFile);
  const chain = new ChainClient(rpc);
  await checkKernelsAgainstChain(chain); // PROTOCOL §10.6: refuse to start on kernels that differ
  const home = await openHome(homeDir);
  const emit = (e: RefereeEvent | RefereeStatus) => {
    if (values.json) return console.log(canonical(e));
    if (e.event === "status") {
      const s = e as RefereeStatus;
      return console.log(
        `status height=${s.height} scanned=${s.scanned} behind_blocks=${s.behind_blocks} claims=${s.claims} ` +
          `stages_checked=${s.stages_checked} behind_stages=${s.behind_stages} challenges=${s.challenges}`,
      );
    }
    const r = e as RefereeEvent;
    console.log(`${r.event} ${r.claim_id}${r.stage === null ? "" : ` stage ${r.stage}`} ${r.detail}`);
  };
  console.log(
    values.json
      ? canonical({ event: "account", account: home.key.accountId })
      : `account ${home.key.accountId}`,
  );
  const referee = await Referee.open({
    home,
    chain,
    workers: entries.map((e) => new WorkerClient(e.url, e.token)),
    emit,
  });
  if (values.once) {
    emit(await referee.runOnce());
    home.journal.close();
    return;
  }
  const abort = new AbortController();
  const stop = () => abort.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await referee.run({ pollMs, signal: abort.signal });
  home.journal.close();
}

if (import.meta.main) await runTask("referee", main);
