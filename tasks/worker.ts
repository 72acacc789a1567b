/** `deno task worker`: run a Worker actor (actors/worker/server.ts) until interrupted. */
import { parseForge } from "../actors/worker/forge.ts";
import { startWorker } from "../actors/worker/server.ts";
import { conformanceVectors } from "../genesis/conformance.ts";
import { assertConformance } from "../kernels/conformance.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";
import { SERVER_FLAG_HELP, SERVER_FLAG_OPTIONS, serverLimits } from "./_server_flags.ts";

const HELP = `deno task worker --home DIR [--port N] [--forge optimizer|forward|backward|score|chunks]

Run a Worker: computes the pipeline stages a sponsor assigns to it, journals every operation in
DIR/journal.sqlite before computing and before replying, keeps every activation, gradient and component in
DIR/objects/, and signs work receipts with DIR/account.key (created on first start, mode 0600). Its HTTP API
listens on 127.0.0.1 and requires the bearer token in DIR/token (created on first start, mode 0600).
Prints "listening <url>" and "account <id>" when ready. A restarted worker re-executes any operation it had
begun and answers re-deliveries from its journal.

Options:
  --home DIR        worker directory (created if missing)
  --port N          port on 127.0.0.1 (default 0: any free port, printed at start)
  --forge MODE      dishonest worker for tests and demos: flip one bit of the updated component
                    (optimizer), of the output of the stage's block n/2 rounded down (forward: the last of
                    one or two blocks, block 2 of 3), or of the gradient sent back (backward),
                    or report the losses of a group's first score windows halved (score), or commit a
                    wrong chunk root for the stage's first parent component (chunks)
${SERVER_FLAG_HELP}
  -h, --help        show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    port: { type: "string" },
    forge: { type: "string" },
    ...SERVER_FLAG_OPTIONS,
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const home = required(values.home, "home");
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port is ${values.port}, expected 0-65535`);
  }
  let forge;
  try {
    forge = parseForge(values.forge);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  // PROTOCOL §10.6: a worker reads no genesis; it checks its kernels against the vectors every genesis pins.
  assertConformance(conformanceVectors());
  const worker = await startWorker({ home, port, forge, limits: serverLimits(values) });
  for (const r of worker.actor.recovered) {
    console.log(`recovered ${r.opId} ${r.ok ? "done" : `still begun: ${r.error.message}`}`);
  }
  console.log(`account ${worker.home.key.accountId}`);
  console.log(`listening ${worker.url}`);
  const stop = async () => {
    await worker.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

if (import.meta.main) await runTask("worker", main);
