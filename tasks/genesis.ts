/**
 * `deno task genesis devnet|cometbft --out DIR`: write a devnet genesis and the keys of its validators and
 * owners; `cometbft` also writes a CometBFT home beside each validator's keys.
 */
import { writeDevnetGenesis } from "../genesis/ledger_devnet.ts";
import { cometHomeOf, writeCometHomes } from "../ledger/abci/comet_home.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task genesis devnet|cometbft --out DIR [options]

Write a devnet genesis (DIR/genesis.json) with the devnet params, and for each validator a home directory
DIR/validator-<i>/ with its Ed25519 consensus key (consensus.key) and its owner's account key (account.key),
plus a funded faucet account (DIR/faucet/account.key). Key files are mode 0600 and never overwritten.

With cometbft, each validator home also gets a CometBFT home DIR/validator-<i>/cometbft/ (genesis.json from
ours, priv_validator_key.json from the same Ed25519 consensus key, a new node key, config.toml with RPC and
P2P on 127.0.0.1 ports free when written, every other validator as a persistent peer, and consensus timeouts
from the block interval), for deno task validator --engine cometbft.

Options:
  --out DIR               where to write (refused if DIR/genesis.json exists)
  --validators N          number of validators (default 4)
  --spares N              extra validator homes with keys and a funded owner but no genesis bond, to bond
                          later with deno task validator bond (default 0)
  --chain-id ID           chain id (default neuroshard-devnet)
  --block-interval-ms N   proposer block interval (default 1000)
  -h, --help              show this help

Then start a network, for example:
  deno task validator --home DIR/validator-0 --genesis DIR/genesis.json --port 26657
  deno task validator --home DIR/validator-1 --genesis DIR/genesis.json --follow http://127.0.0.1:26657 --port 26658
or, after genesis cometbft, each of:
  deno task validator --engine cometbft --home DIR/validator-<i> --genesis DIR/genesis.json`;

function integer(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value)) {
    throw new UsageError(`--${option} is ${value}, expected a non-negative integer`);
  }
  return Number(value);
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    out: { type: "string" },
    validators: { type: "string" },
    spares: { type: "string" },
    "chain-id": { type: "string" },
    "block-interval-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const command = positionals[0];
  if ((command !== "devnet" && command !== "cometbft") || positionals.length !== 1) {
    throw new UsageError(
      `expected the command devnet or cometbft, got ${JSON.stringify(positionals.join(" "))}`,
    );
  }
  const validators = integer(values.validators, "validators");
  const spares = integer(values.spares, "spares");
  const interval = integer(values["block-interval-ms"], "block-interval-ms");
  const r = await writeDevnetGenesis({
    out: required(values.out, "out"),
    ...(validators !== undefined ? { validators } : {}),
    ...(spares !== undefined ? { spares } : {}),
    ...(values["chain-id"] !== undefined ? { chainId: values["chain-id"] } : {}),
    ...(interval !== undefined ? { blockIntervalMs: interval } : {}),
  });
  console.log(`genesis ${r.genesisPath} (id ${r.genesisId})`);
  for (const home of r.homes) console.log(`validator home ${home}`);
  if (command === "cometbft") {
    for (const n of await writeCometHomes(r.genesisPath, r.homes)) {
      console.log(`cometbft home ${cometHomeOf(n.home)} node ${n.nodeId} p2p ${n.p2pPort} rpc ${n.rpcPort}`);
    }
  }
  console.log(`faucet key ${r.faucet}`);
}

if (import.meta.main) await runTask("genesis", main);
