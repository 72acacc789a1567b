/** `deno task explorer`: a read-only web explorer of a live network (`--rpc`) or of a state file (`--state`). */
import { RpcSource } from "../explorer/rpc_source.ts";
import { startExplorer } from "../explorer/server.ts";
import type { ChainSource } from "../explorer/source.ts";
import { StateSource } from "../explorer/state_source.ts";
import { integerOption, parse, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task explorer (--rpc URL | --state FILE) [--port P] [--objects DIR]

Serve a read-only web explorer of a NeuroShard network on 127.0.0.1 and print its URL: the chain head and a
live block list, every transaction decoded with its result and error code, the training claims with their
loss, outcome and reward and a loss-over-rounds chart, the disputes (challenger, stage, bytes and chunks
uploaded, blocks taken, verdict, slash), the data, evaluation and inference lifecycles, and every account and
validator with balances, bonds and power. Every id links to its page.

Options:
  --rpc URL      a running validator's RPC (for example http://127.0.0.1:26657)
  --state FILE   a validator's state.sqlite (VALIDATOR_HOME/state.sqlite), opened read-only: it is never
                 created, initialised, migrated or written; committed transactions of a running validator
                 are visible
  --port P       the port on 127.0.0.1 (default 0: the system chooses)
  --objects DIR  an object store holding the model's text codec, read only, to decode inference prompts and
                 answers (default with --state: the objects/ folder beside the state file, when there is one)
  -h, --help     show this help

Stop it with Ctrl-C.`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    rpc: { type: "string" },
    state: { type: "string" },
    port: { type: "string" },
    objects: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if ((values.rpc === undefined) === (values.state === undefined)) {
    throw new UsageError("exactly one of --rpc URL and --state FILE is required");
  }
  const port = integerOption(values.port, "port", { fallback: 0, min: 0, max: 65_535 });
  let source: ChainSource;
  if (values.rpc !== undefined) {
    if (!/^https?:\/\/[^\s/]+/.test(values.rpc)) {
      throw new UsageError(`--rpc is ${values.rpc}, expected a URL like http://127.0.0.1:26657`);
    }
    source = new RpcSource(values.rpc);
  } else {
    source = StateSource.open(values.state!);
  }
  const beside = values.state === undefined ? null : `${values.state.replace(/[^/]*$/, "") || "./"}objects`;
  const objects = values.objects ?? (beside !== null && isDirectory(beside) ? beside : null);
  const explorer = await startExplorer(source, { port, objects });
  console.log(`explorer of ${source.description}`);
  console.log(`listening on ${explorer.url}`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
  });
  await explorer.close();
}

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

if (import.meta.main) await runTask("explorer", main);
