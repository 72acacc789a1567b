/**
 * `deno task devnet:codec`: builds the devnet tokenizer (4,096 pieces trained on the generator's first rows)
 * and its text codec, stores both in an object store and prints the codec root.
 */
import { canonical } from "../core/canonical.ts";
import { ObjectStore } from "../core/object_store.ts";
import { buildDevnetCodec, DEVNET_TOKENIZER_ROWS, DEVNET_VOCAB } from "../genesis/devnet/codec.ts";
import { DEVNET_SOURCE } from "../genesis/devnet/generator.ts";
import { loadCodec, storeCodec } from "../text/codec.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task devnet:codec --objects DIR [--tokenizer-out FILE] [--seed SEED]

Train the devnet tokenizer (${DEVNET_VOCAB} pieces) on the rendered text of the first ${DEVNET_TOKENIZER_ROWS}
rows of the devnet data source (${DEVNET_SOURCE.generator}, seed ${DEVNET_SOURCE.seed}), bind it with the SmolLM2
chat template into a text codec, store backend and manifest in the object store DIR, and print the codec root.

Options:
  --objects DIR          the object store directory
  --tokenizer-out FILE   also write the tokenizer.json there (refuses to overwrite)
  --seed SEED            another seed of the same generator (default ${DEVNET_SOURCE.seed})
  -h, --help             show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    objects: { type: "string" },
    "tokenizer-out": { type: "string" },
    seed: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const store = new ObjectStore(required(values.objects, "objects"));
  const out = values["tokenizer-out"];
  const source = { ...DEVNET_SOURCE, seed: values.seed ?? DEVNET_SOURCE.seed };
  const started = performance.now();
  const { codec, tokenizer } = buildDevnetCodec(source);
  if (out !== undefined) {
    await Deno.writeTextFile(out, canonical(tokenizer), { createNew: true }).catch((e) => {
      throw new UsageError(
        `Cannot write ${out}: ${e instanceof Deno.errors.AlreadyExists ? "the file exists" : e}`,
      );
    });
  }
  const root = await storeCodec(store, codec);
  await loadCodec(store, root);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.error(
    `devnet codec: ${codec.manifest.vocabulary} pieces, backend ${codec.manifest.backend}, ${seconds} s`,
  );
  console.log(root);
}

if (import.meta.main) await runTask("devnet:codec", main);
