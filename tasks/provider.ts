/** `deno task provider`: run the Provider actor (actors/provider/provider.ts) until interrupted. */
import { canonical } from "../core/canonical.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { checkKernelsAgainstChain } from "../actors/common/kernel_check.ts";
import { openHome } from "../actors/common/home.ts";
import { readWorkersFile } from "../actors/common/worker_client.ts";
import { Provider, type ProviderEvent } from "../actors/provider/provider.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task provider --home DIR --rpc URL [--workers FILE] [--forge token] [--json] [--once]

Run a Provider: answers the paid inference requests (deno task infer) addressed to its account. For each
job it journals the request before generating, generates greedily with the pinned model (from DIR/objects)
and the deterministic kernels, commits the generation record (one prefill over prompt + answer, by
partition, and the head's argmax), journals the response before submitting it and submits "respond" through
the lost-acknowledgement-safe submitter. It bonds 20 NEURO per response until the response settles, and
answers availability challenges on its responses from its object store. Killed at any point and restarted
with the same DIR, it never responds twice and never drops a job it began.

Prints "account <id>", then one line per job, answer, response, publication and outcome (one JSON object
per line with --json).

Options:
  --home DIR        provider directory (account.key created if missing; fund it for the provider bond;
                    DIR/objects must hold the served model's components)
  --rpc URL         a validator's RPC URL
  --workers FILE    JSON array of {url, token | token_file, capacity}: the record is split into partitions
                    by these capacities (placement of PROTOCOL §10.3); the provider computes every
                    partition itself
  --forge token     (tests and devnet) forge the first token of each job's first answer
  --poll-ms N       pause between passes (default 300)
  --once            one pass, then exit
  --json            machine-readable lines
  -h, --help        show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    rpc: { type: "string" },
    workers: { type: "string" },
    forge: { type: "string" },
    "poll-ms": { type: "string" },
    once: { type: "boolean" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const homeDir = required(values.home, "home");
  const rpc = required(values.rpc, "rpc");
  if (values.forge !== undefined && values.forge !== "token") {
    throw new UsageError(`--forge is ${values.forge}, expected token`);
  }
  const pollMs = integerOption(values["poll-ms"], "poll-ms", { fallback: 300 });
  const capacities = values.workers === undefined
    ? null
    : (await readWorkersFile(values.workers)).map((e) => e.capacity);
  const chain = new ChainClient(rpc);
  await checkKernelsAgainstChain(chain); // PROTOCOL §10.6: refuse to start on kernels that differ
  const home = await openHome(homeDir);
  const emit = (e: ProviderEvent) =>
    console.log(values.json ? canonical(e) : `${e.event} ${e.job_id} ${e.detail}`);
  console.log(
    values.json
      ? canonical({ event: "account", account: home.key.accountId })
      : `account ${home.key.accountId}`,
  );
  const provider = await Provider.open({
    home,
    chain,
    emit,
    forge: values.forge === "token" ? "token" : null,
    capacities,
  });
  if (values.once) {
    await provider.runOnce();
    home.journal.close();
    return;
  }
  const abort = new AbortController();
  const stop = () => abort.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await provider.run({ pollMs, signal: abort.signal });
  home.journal.close();
}

if (import.meta.main) await runTask("provider", main);
