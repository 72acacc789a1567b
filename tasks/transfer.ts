/** `deno task transfer`: sign a transfer with an account key and broadcast it to a validator. */
import { loadKeyFile } from "../ledger/keys.ts";
import { signBody } from "../ledger/envelope.ts";
import { LedgerClient } from "../ledger/rpc/client.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task transfer --key FILE --to ACCOUNT --amount ATOMS [options]

Sign a transfer of ATOMS (integer atoms; 1 NEURO = 1,000,000 atoms) from the account of FILE to ACCOUNT
(66 hex), broadcast it, and wait until it is committed. The fee (1,000 atoms by default) is burned on top.

Options:
  --key FILE       the sender's account key file (mode 0600)
  --to ACCOUNT     the receiving account id
  --amount ATOMS   the amount in atoms
  --rpc URL        a validator's RPC (default http://127.0.0.1:26657)
  --nonce N        the nonce to use (default: the account's next nonce from the RPC)
  --no-wait        print the hash and return without waiting for the commit
  -h, --help       show this help`;

async function main(): Promise<void> {
  const { values } = parse(Deno.args, {
    key: { type: "string" },
    to: { type: "string" },
    amount: { type: "string" },
    rpc: { type: "string" },
    nonce: { type: "string" },
    "no-wait": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  const key = await loadKeyFile(required(values.key, "key"));
  const to = required(values.to, "to");
  const amountText = required(values.amount, "amount");
  if (!/^[1-9][0-9]*$/.test(amountText) || !Number.isSafeInteger(Number(amountText))) {
    throw new UsageError(`--amount is ${amountText}, expected a positive integer of atoms`);
  }
  if (values.nonce !== undefined && !/^(0|[1-9][0-9]*)$/.test(values.nonce)) {
    throw new UsageError(`--nonce is ${values.nonce}, expected a non-negative integer`);
  }
  const client = new LedgerClient(values.rpc ?? "http://127.0.0.1:26657");
  const status = await client.status();
  const nonce = values.nonce !== undefined
    ? Number(values.nonce)
    : (await client.account(key.accountId)).nonce;
  const envelope = signBody({
    kind: "transfer",
    chain_id: status.chain_id,
    nonce,
    to,
    amount: Number(amountText),
  }, key);
  const sent = await client.broadcast(envelope);
  if (!sent.check.ok) {
    console.error(`error: transfer rejected: ${sent.check.message} (${sent.check.code})`);
    Deno.exit(1);
  }
  console.log(`broadcast ${sent.hash}`);
  if (values["no-wait"]) return;
  const t = await client.waitForTx(sent.hash);
  if (t.status !== "committed") {
    console.error(`error: transfer ${sent.hash} is ${t.status} after 30 s`);
    Deno.exit(1);
  }
  if (!t.result.ok) {
    console.error(`error: transfer failed at height ${t.height}: ${t.result.message} (${t.result.code})`);
    Deno.exit(1);
  }
  console.log(`committed at height ${t.height}`);
}

if (import.meta.main) await runTask("transfer", main);
