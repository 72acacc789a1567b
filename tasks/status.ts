/** `deno task status`: print a validator's chain status, an account or the validator set. */
import { canonical } from "../core/canonical.ts";
import { LedgerClient } from "../ledger/rpc/client.ts";
import { parse, runTask } from "./_cli.ts";

const HELP = `deno task status [options]

Print a validator's status (chain id, genesis id, height, app hash, role, mempool size) as canonical JSON.

Options:
  --rpc URL          a validator's RPC (default http://127.0.0.1:26657)
  --account ID       print this account's balance and next nonce instead
  --validators       print the validator set instead: each validator's owner, bond, power, state and the
                     scheduled change (activate at height H with power P, remove at H, withdrawable from
                     height H and time T, or jailed until unbonded)
  -h, --help         show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    rpc: { type: "string" },
    account: { type: "string" },
    validators: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const client = new LedgerClient(values.rpc ?? "http://127.0.0.1:26657");
  if (values.account !== undefined) return console.log(canonical(await client.account(values.account)));
  if (values.validators) return console.log(canonical(await client.validators()));
  console.log(canonical(await client.status()));
}

if (import.meta.main) await runTask("status", main);
