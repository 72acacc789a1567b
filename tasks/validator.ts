/** `deno task validator`: run a validator node (the embedded proposer or replica, or under CometBFT). */
import { parseJson } from "../core/canonical.ts";
import { type ErrorCode, ProtocolError } from "../core/errors.ts";
import { startNode } from "../ledger/engine/node.ts";
import { startCometNode } from "../ledger/abci/comet_node.ts";
import { installedTool } from "../ledger/abci/cometbft_pin.ts";
import { runValidatorOp, type ValidatorOp } from "./_validator_ops.ts";
import { AutoReviewer } from "../actors/curator/auto_review.ts";
import { testHook } from "../core/test_hooks.ts";
import { parseGenesis } from "../genesis/schema.ts";
import { assertConformance } from "../kernels/conformance.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";
import { SERVER_FLAG_HELP, SERVER_FLAG_OPTIONS, serverLimits } from "./_server_flags.ts";
import type { ServerLimits } from "../core/bounded_server.ts";

const HELP = `deno task validator --home DIR --genesis FILE [options]
deno task validator bond --home DIR --rpc URL --amount ATOMS
deno task validator unbond|withdraw --home DIR --rpc URL

Run a validator: the ledger state in DIR/state.sqlite, the RPC on 127.0.0.1, and DIR/consensus.key (when
present) to attest blocks. Without --follow the node is the proposer and makes a block every interval; with
--follow it is a replica that re-applies every block of that proposer and stops (exit code 3) at the first
block whose app hash differs, printing the height and both hashes. A restarted node resumes at its height.
A node refuses a genesis whose id differs from the one its state was created with.

With --engine cometbft the node serves the ledger on an ABCI socket (127.0.0.1, any free port) and runs CometBFT on
DIR/cometbft (written by deno task genesis cometbft; the binary from deno task cometbft:install, or
$NEURO_COMETBFT); our RPC stays in front. If CometBFT exits the node stops (exit code 1); SIGINT/SIGTERM stop
both. CometBFT's log is DIR/cometbft/cometbft.log.

bond, unbond and withdraw sign the operator's transaction with DIR/account.key (the owner; a bond adds the
possession proof of DIR/consensus.key), submit it through the RPC, wait for its commit and print the result;
the signed bytes are journaled in DIR/operator-journal.sqlite first, so running the command again after a
lost reply looks the transaction up instead of signing a second one (only a rejected attempt is retried).
A bond of ATOMS (a multiple of bond_unit) activates at the first epoch boundary at or after activation_blocks;
unbond leaves at the next boundary; withdraw pays the bond back once evidence_blocks and evidence_ms passed.

Options:
  --home DIR            node directory (created if missing)
  --rpc URL             (bond/unbond/withdraw) a validator's RPC
  --amount ATOMS        (bond) the bond in atoms
  --genesis FILE        genesis.json
  --engine NAME         embedded (default) or cometbft
  --follow URL          the proposer's RPC URL (makes this node a replica; embedded engine only)
  --port N              RPC port on 127.0.0.1 (default 0: any free port, printed at start)
  --interval-ms N       override the genesis block interval (proposer only)
  --review-policy FILE  review every new data proposal with the Curator's review, from the raw files the
                        policy names ({"sources": "sources.json", "poll_ms"?: 1000}), and vote approve with
                        DIR/account.key only when the verdict is approve (journal in DIR/reviewer/)
  --upstream-timeout-ms N  a replica's call to its proposer fails with upstream_timeout (answered 504)
                        after N ms (default 10000; a follow long poll gets 5000 ms more)
${SERVER_FLAG_HELP}
  -h, --help            show this help

The proposer journals every transaction it answers as accepted in DIR/mempool.sqlite before answering and
re-admits them after a restart. A --follow URL this process may not connect to (the task may reach 127.0.0.1
only, so not localhost) is refused at start with permission_denied.

Test hook: NEURO_TEST_DIVERGENT_FEE=N makes this node burn N atoms per transaction instead of the genesis
fee, so that it diverges on purpose; NEURO_TEST_PAUSE_BEFORE_COMMIT=H makes it stop between applying and
persisting block H (writing DIR/paused-before-commit) so a crash test can kill it there. Both are honoured
only by a process started with permission to read them (--allow-env=NAME or -A, as tests do); this task
does not grant it.`;

/**
 * Crash-test hook: marks the block as being applied, then blocks this process until it is killed. A test that
 * never kills it (one that failed) does not leave it running: after 10 minutes it exits with status 70,
 * never going on to persist the block, so an over-long pause cannot look like a node that never paused.
 */
function pauseForever(home: string, height: number): void {
  Deno.writeTextFileSync(`${home}/paused-before-commit`, `${height}\n`);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600_000);
  Deno.exit(70);
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    home: { type: "string" },
    genesis: { type: "string" },
    follow: { type: "string" },
    port: { type: "string" },
    "interval-ms": { type: "string" },
    engine: { type: "string" },
    rpc: { type: "string" },
    amount: { type: "string" },
    "review-policy": { type: "string" },
    "upstream-timeout-ms": { type: "string" },
    ...SERVER_FLAG_OPTIONS,
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) return await operate(positionals, values);
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
  const policy = values["review-policy"];
  const genesis = parseJson(text);
  // PROTOCOL §10.6: a node whose kernels do not reproduce the genesis's conformance vectors does not start.
  assertConformance(parseGenesis(genesis).vectors);
  if (engine === "cometbft") return await runComet(home, genesis, port, serverLimits(values), policy);
  const divergent = testHook("NEURO_TEST_DIVERGENT_FEE");
  const pauseAt = Number(testHook("NEURO_TEST_PAUSE_BEFORE_COMMIT") ?? "0");
  const hooks = {
    ...(divergent ? { divergentParams: { fee: Number(divergent) } } : {}),
    ...(pauseAt > 0
      ? { beforeCommit: (height: number) => height === pauseAt && pauseForever(home, height) }
      : {}),
  };
  const node = await startNode({
    home,
    genesis,
    ...(values.follow ? { follow: values.follow } : {}),
    port,
    ...(interval ? { intervalMs: interval } : {}),
    ...(values["upstream-timeout-ms"] !== undefined
      ? { upstreamTimeoutMs: integerOption(values["upstream-timeout-ms"], "upstream-timeout-ms") }
      : {}),
    server: serverLimits(values),
    app: hooks,
  });
  const reviewer = await startReviewer(home, node.url, policy);
  const stop = () => void node.stop();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const halt = await node.done;
  await reviewer?.stop();
  await node.stop();
  if (halt?.code === "permission_denied") throw new ProtocolError(halt.code, halt.message);
  if (halt) Deno.exit(3);
}

async function operate(
  positionals: string[],
  values: { home?: string | undefined; rpc?: string | undefined; amount?: string | undefined },
): Promise<void> {
  const op = positionals[0]!;
  if (!["bond", "unbond", "withdraw"].includes(op) || positionals.length !== 1) {
    throw new UsageError(`expected bond, unbond or withdraw, got ${JSON.stringify(positionals.join(" "))}`);
  }
  const home = required(values.home, "home");
  const rpc = required(values.rpc, "rpc");
  if (op === "bond" && values.amount === undefined) throw new UsageError("--amount is required for bond");
  if (op !== "bond" && values.amount !== undefined) {
    throw new UsageError(`--amount belongs to bond, not ${op}`);
  }
  const amount = op === "bond" ? integerOption(values.amount, "amount") : null;
  const r = await runValidatorOp(op as ValidatorOp, home, rpc, amount);
  if (r.status === "committed") return console.log(`${op} ${r.hash} committed at height ${r.height}`);
  if (r.status === "rejected") {
    const where = r.height === null ? "refused" : `failed at height ${r.height}`;
    throw new ProtocolError(
      (r.code ?? "internal_error") as ErrorCode,
      `Cannot ${op}: ${where}: ${r.message}`,
    );
  }
  throw new Error(`Cannot ${op}: ${r.hash} has no outcome yet; run the same command again to look it up`);
}

/** The operator's auto-review beside the node, when a policy is given (`actors/curator/auto_review.ts`). */
async function startReviewer(
  home: string,
  url: string,
  policy: string | undefined,
): Promise<AutoReviewer | null> {
  if (policy === undefined) return null;
  return await AutoReviewer.start({ home, rpc: url, policyPath: policy, say: (line) => console.log(line) });
}

async function runComet(
  home: string,
  genesis: ReturnType<typeof parseJson>,
  port: number,
  server: Partial<ServerLimits>,
  policy: string | undefined,
): Promise<void> {
  const root = new URL("../", import.meta.url).pathname;
  const cometbft = await installedTool(root, "cometbft");
  if (!cometbft) {
    throw new Error(
      "Cannot start the cometbft engine: cometbft is not installed (run deno task cometbft:install)",
    );
  }
  const node = await startCometNode({ home, genesis, cometbft, port, server });
  const reviewer = await startReviewer(home, node.url, policy);
  const stop = () => void node.stop();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const code = await node.done;
  await reviewer?.stop();
  await node.stop();
  if (code !== null) Deno.exit(1);
}

if (import.meta.main) await runTask("validator", main);
