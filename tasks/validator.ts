/** `deno task validator`: run a validator node (the embedded proposer or replica, or under CometBFT). */
import { parseJson } from "../core/canonical.ts";
import { startNode } from "../ledger/engine/node.ts";
import { startCometNode } from "../ledger/abci/comet_node.ts";
import { installedTool } from "../ledger/abci/cometbft_pin.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task validator --home DIR --genesis FILE [options]

Run a validator: the ledger state in DIR/state.sqlite, the RPC on 127.0.0.1, and DIR/consensus.key (when
present) to attest blocks. Without --follow the node is the proposer and makes a block every interval; with
--follow it is a replica that re-applies every block of that proposer and stops (exit code 3) at the first
block whose app hash differs, printing the height and both hashes. A restarted node resumes at its height.
A node refuses a genesis whose id differs from the one its state was created with.

With --engine cometbft the node serves the ledger on an ABCI socket (127.0.0.1, any free port) and runs CometBFT on
DIR/cometbft (written by deno task genesis cometbft; the binary from deno task cometbft:install, or
$NEURO_COMETBFT); our RPC stays in front. If CometBFT exits the node stops (exit code 1); SIGINT/SIGTERM stop
both. CometBFT's log is DIR/cometbft/cometbft.log.

Options:
  --home DIR            node directory (created if missing)
  --genesis FILE        genesis.json
  --engine NAME         embedded (default) or cometbft
  --follow URL          the proposer's RPC URL (makes this node a replica; embedded engine only)
  --port N              RPC port on 127.0.0.1 (default 0: any free port, printed at start)
  --interval-ms N       override the genesis block interval (proposer only)
  -h, --help            show this help

Test hook: NEURO_TEST_DIVERGENT_FEE=N makes this node burn N atoms per transaction instead of the genesis
fee, so that it diverges on purpose; NEURO_TEST_PAUSE_BEFORE_COMMIT=H makes it stop between applying and
persisting block H (writing DIR/paused-before-commit) so a crash test can kill it there (tests only).`;

/** Crash-test hook: marks the block as being applied, then blocks this process until it is killed. */
function pauseForever(home: string, height: number): void {
  Deno.writeTextFileSync(`${home}/paused-before-commit`, `${height}\n`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000);
}

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    home: { type: "string" },
    genesis: { type: "string" },
    follow: { type: "string" },
    port: { type: "string" },
    "interval-ms": { type: "string" },
    engine: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const engine = values.engine ?? "embedded";
  if (engine !== "embedded" && engine !== "cometbft") {
    throw new UsageError(`--engine is ${engine}, expected embedded or cometbft`);
  }
  if (engine === "cometbft" && (values.follow !== undefined || values["interval-ms"] !== undefined)) {
    throw new UsageError(
      "--follow and --interval-ms belong to the embedded engine, not to --engine cometbft",
    );
  }
  const home = required(values.home, "home");
  const genesisPath = required(values.genesis, "genesis");
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port is ${values.port}, expected 0-65535`);
  }
  const interval = values["interval-ms"] === undefined
    ? undefined
    : integerOption(values["interval-ms"], "interval-ms");
  let text: string;
  try {
    text = await Deno.readTextFile(genesisPath);
  } catch (e) {
    throw new UsageError(`Cannot read genesis ${genesisPath}: ${(e as Error).message}`);
  }
  if (engine === "cometbft") return await runComet(home, parseJson(text), port);
  const divergent = Deno.env.get("NEURO_TEST_DIVERGENT_FEE");
  const pauseAt = Number(Deno.env.get("NEURO_TEST_PAUSE_BEFORE_COMMIT") ?? "0");
  const hooks = {
    ...(divergent ? { divergentParams: { fee: Number(divergent) } } : {}),
    ...(pauseAt > 0
      ? { beforeCommit: (height: number) => height === pauseAt && pauseForever(home, height) }
      : {}),
  };
  const node = await startNode({
    home,
    genesis: parseJson(text),
    ...(values.follow ? { follow: values.follow } : {}),
    port,
    ...(interval ? { intervalMs: interval } : {}),
    app: hooks,
  });
  const stop = () => void node.stop();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const halt = await node.done;
  await node.stop();
  if (halt) Deno.exit(3);
}

async function runComet(home: string, genesis: ReturnType<typeof parseJson>, port: number): Promise<void> {
  const root = new URL("../", import.meta.url).pathname;
  const cometbft = await installedTool(root, "cometbft");
  if (!cometbft) {
    throw new Error(
      "Cannot start the cometbft engine: cometbft is not installed (run deno task cometbft:install)",
    );
  }
  const node = await startCometNode({ home, genesis, cometbft, port });
  const stop = () => void node.stop();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const code = await node.done;
  await node.stop();
  if (code !== null) Deno.exit(1);
}

if (import.meta.main) await runTask("validator", main);
