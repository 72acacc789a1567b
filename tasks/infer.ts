/** `deno task infer`: ask one question of a Provider over the network, pay for it, print the settled answer. */
import { canonical } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { ask } from "../actors/client/ask.ts";
import { ChainClient } from "../actors/common/chain.ts";
import { Journal } from "../actors/runtime/journal.ts";
import { isAccountId, loadKeyFile } from "../ledger/keys.ts";
import { integerOption, parse, required, runTask, UsageError } from "./_cli.ts";

const HELP =
  `deno task infer --key FILE --rpc URL --provider ID --prompt TEXT [--max-tokens N] [--max-price ATOMS] [--json]

Ask the served model one question through a Provider, paid on the ledger. The prompt is one user message
rendered with the model's chat template (the codec pinned by the serving model, read from --objects);
control tokens and prompts outside 2-192 tokens are refused. The client signs "infer" (escrowing the price
cap), submits it through the lost-acknowledgement-safe submitter, follows the job with a progress line on
stderr (responded, challenged, refuted and retried, settled or expired) and prints the answer the network
verified and settled, then what was paid and refunded.

Options:
  --key FILE        the paying account's key file (e.g. alice/account.key); the client journal is kept
                    beside it (infer.sqlite) unless --journal is given
  --rpc URL         a validator's RPC URL
  --provider ID     the provider's account id
  --prompt TEXT     the question
  --max-tokens N    at most N new tokens, 1-8 (default 8)
  --max-price N     the price cap in atoms (default max-tokens x price per token)
  --expires-in N    blocks the request stays open (default 10 challenge windows, within the chain's bounds)
  --objects DIR     the object store holding the codec (default .neuroshard/objects)
  --journal FILE    the client's journal (default infer.sqlite beside the key)
  --request KEY     an idempotency key: asking again with the same key, provider and prompt resumes the
                    question already paid (after a crash or a lost reply) instead of paying again
  --json            print the outcome as one JSON object
  -h, --help        show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    key: { type: "string" },
    rpc: { type: "string" },
    provider: { type: "string" },
    prompt: { type: "string" },
    "max-tokens": { type: "string" },
    "max-price": { type: "string" },
    "expires-in": { type: "string" },
    objects: { type: "string", default: ".neuroshard/objects" },
    journal: { type: "string" },
    request: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const keyFile = required(values.key, "key");
  const rpc = required(values.rpc, "rpc");
  const provider = required(values.provider, "provider");
  if (!isAccountId(provider)) {
    throw new UsageError(`--provider is ${provider}, expected an account id (66 hex)`);
  }
  const prompt = required(values.prompt, "prompt");
  const maxTokens = values["max-tokens"] === undefined
    ? undefined
    : integerOption(values["max-tokens"], "max-tokens", { max: 8 });
  const maxPrice = values["max-price"] === undefined
    ? undefined
    : integerOption(values["max-price"], "max-price");
  const expiresIn = values["expires-in"] === undefined
    ? undefined
    : integerOption(values["expires-in"], "expires-in");
  const key = await loadKeyFile(keyFile);
  const dir = keyFile.includes("/") ? keyFile.slice(0, keyFile.lastIndexOf("/")) : ".";
  const journal = Journal.open(values.journal ?? `${dir}/infer.sqlite`);
  try {
    const result = await ask(
      {
        chain: new ChainClient(rpc),
        key,
        journal,
        store: new ObjectStore(values.objects),
        progress: (line) => console.error(line),
      },
      {
        provider,
        prompt,
        ...(maxTokens === undefined ? {} : { maxTokens }),
        ...(maxPrice === undefined ? {} : { maxPrice }),
        ...(expiresIn === undefined ? {} : { expiresIn }),
        ...(values.request === undefined ? {} : { request: values.request }),
      },
    );
    if (values.json) return console.log(canonical(result));
    if (result.status === "expired") {
      console.log(`no answer before the deadline: refunded ${result.refunded} atoms (job ${result.job_id})`);
      return;
    }
    console.log(result.answer);
    console.log(
      `paid ${result.paid} atoms for ${result.tokens.length} tokens, refunded ${result.refunded} atoms (job ${result.job_id})`,
    );
  } finally {
    journal.close();
  }
}

if (import.meta.main) await runTask("infer", main);
