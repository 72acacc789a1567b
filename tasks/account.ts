/**
 * `deno task account`: create an account key, show its id, sign a transaction body, verify an envelope.
 */
import { parseJson } from "../core/canonical.ts";
import { canonical } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import { createKeyFile, loadKeyFile, publicKeyPem } from "../ledger/keys.ts";
import { envelopeBytes, rawHash, signBody, type TxBody, verifyEnvelope } from "../ledger/envelope.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task account <command> [options]

Manage a NeuroShard account key and sign or verify transactions.

Commands:
  new --home DIR                 create DIR/account.key (mode 0600; never overwritten) and print the account id
  show --home DIR [--pem]        print the account id (and the public key as PEM with --pem)
  sign --home DIR BODY.json      sign a transaction body and print the envelope (canonical JSON)
       [--out FILE]              write the envelope to FILE instead (refuses to overwrite)
  verify ENVELOPE.json           check an envelope's shape and signature; print its txid, sender and raw hash

A body needs "kind", "chain_id" and "nonce" plus the fields of its kind, for example:
  {"kind":"transfer","chain_id":"neuroshard-devnet","nonce":0,"to":"02…","amount":1000000}

Options:
  -h, --help                     show this help`;

/** The key file of an actor's home directory. */
export function keyPath(home: string): string {
  return `${home.replace(/\/+$/, "")}/account.key`;
}

async function readJsonFile(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new UsageError(`Cannot read ${what} ${path}: ${(e as Error).message}`);
  }
  try {
    return parseJson(text.trimEnd());
  } catch (e) {
    if (e instanceof ProtocolError) {
      throw new ProtocolError(e.code, `Cannot read ${what} ${path}: ${e.message}`);
    }
    throw e;
  }
}

async function main(): Promise<void> {
  const [command, ...rest] = Deno.args;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    console.log(HELP);
    return;
  }
  const { values, positionals } = parse(rest, {
    home: { type: "string" },
    pem: { type: "boolean" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  switch (command) {
    case "new": {
      const key = await createKeyFile(keyPath(required(values.home, "home")));
      console.log(key.accountId);
      return;
    }
    case "show": {
      const key = await loadKeyFile(keyPath(required(values.home, "home")));
      console.log(key.accountId);
      if (values.pem) console.log(publicKeyPem(key.accountId).trimEnd());
      return;
    }
    case "sign": {
      const key = await loadKeyFile(keyPath(required(values.home, "home")));
      if (positionals.length !== 1) throw new UsageError("sign takes exactly one BODY.json");
      const body = await readJsonFile(positionals[0]!, "body");
      const envelope = signBody(body as TxBody, key);
      const checked = verifyEnvelope(envelope); // the same checks a validator runs, before anything is written
      if (!checked.ok) throw new ProtocolError(checked.code, checked.message);
      const text = canonical(envelope);
      if (values.out) {
        await Deno.writeTextFile(values.out, text + "\n", { createNew: true }).catch((e) => {
          throw e instanceof Deno.errors.AlreadyExists
            ? new UsageError(`Cannot write ${values.out}: it exists`)
            : e;
        });
        console.error(`wrote ${values.out} (txid ${checked.value.txid})`);
      } else {
        console.log(text);
      }
      return;
    }
    case "verify": {
      if (positionals.length !== 1) throw new UsageError("verify takes exactly one ENVELOPE.json");
      const envelope = await readJsonFile(positionals[0]!, "envelope");
      const checked = verifyEnvelope(envelope);
      if (!checked.ok) throw new ProtocolError(checked.code, checked.message);
      console.log(canonical({
        ok: true,
        txid: checked.value.txid,
        sender: checked.value.sender,
        raw_hash: rawHash(envelopeBytes(checked.value.envelope)),
        kind: checked.value.envelope.body.kind,
        nonce: checked.value.envelope.body.nonce,
      }));
      return;
    }
    default:
      throw new UsageError(`unknown command "${command}" (expected new, show, sign or verify)`);
  }
}

if (import.meta.main) await runTask("account", main);
