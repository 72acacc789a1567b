/** `deno task genesis devnet --out DIR`: write a devnet genesis and the keys of its validators and owners. */
import { writeDevnetGenesis } from "../genesis/ledger_devnet.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task genesis devnet --out DIR [options]

Write a devnet genesis (DIR/genesis.json) with the devnet params, and for each validator a home directory
DIR/validator-<i>/ with its Ed25519 consensus key (consensus.key) and its owner's account key (account.key),
plus a funded faucet account (DIR/faucet/account.key). Key files are mode 0600 and never overwritten.

Options:
  --out DIR               where to write (refused if DIR/genesis.json exists)
  --validators N          number of validators (default 4)
  --chain-id ID           chain id (default neuroshard-devnet)
  --block-interval-ms N   proposer block interval (default 1000)
  -h, --help              show this help

Then start a network, for example:
  deno task validator --home DIR/validator-0 --genesis DIR/genesis.json --port 26657
  deno task validator --home DIR/validator-1 --genesis DIR/genesis.json --follow http://127.0.0.1:26657 --port 26658`;

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
    "chain-id": { type: "string" },
    "block-interval-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals[0] !== "devnet" || positionals.length !== 1) {
    throw new UsageError(`expected the command devnet, got ${JSON.stringify(positionals.join(" "))}`);
  }
  const validators = integer(values.validators, "validators");
  const interval = integer(values["block-interval-ms"], "block-interval-ms");
  const r = await writeDevnetGenesis({
    out: required(values.out, "out"),
    ...(validators !== undefined ? { validators } : {}),
    ...(values["chain-id"] !== undefined ? { chainId: values["chain-id"] } : {}),
    ...(interval !== undefined ? { blockIntervalMs: interval } : {}),
  });
  console.log(`genesis ${r.genesisPath} (id ${r.genesisId})`);
  for (const home of r.homes) console.log(`validator home ${home}`);
  console.log(`faucet key ${r.faucet}`);
}

if (import.meta.main) await runTask("genesis", main);
