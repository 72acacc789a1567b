/**
 * `deno task codec:inspect`: loads and verifies a TextCodec from an object store and prints its manifest
 * summary (root, backend, vocabulary, special tokens, runtime, template) and a sample rendering.
 */
import { ObjectStore } from "../core/object_store.ts";
import { loadCodec } from "../text/codec.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task codec:inspect --codec ROOT --objects DIR

Load the text codec ROOT from the object store DIR, verify it (manifest and backend hashes, runtime versions,
template bounds, special-token ids) and print what it binds together.

Options:
  --codec ROOT     the codec root (64 lowercase hex characters)
  --objects DIR    the object store directory (objects/<2 hex>/<62 hex>)
  -h, --help       show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    codec: { type: "string" },
    objects: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const root = required(values.codec, "codec");
  const dir = required(values.objects, "objects");
  const codec = await loadCodec(new ObjectStore(dir), root);
  const m = codec.manifest;
  const sample = codec.render([{ role: "user", content: "What is 2+3?" }], true);
  const lines = [
    `codec        ${codec.root} (verified)`,
    `format       ${m.format}`,
    `backend      ${m.backend}`,
    `vocabulary   ${m.vocabulary}`,
    ...(["bos", "eos", "pad", "unk"] as const).map((r) =>
      `${r.padEnd(12)} ${JSON.stringify(m.special_tokens[r])} = ${m.special_ids[r]}`
    ),
    `runtime      ${m.runtime.tokenizers}, ${m.runtime.templates}`,
    `renderer     ${m.renderer} (decode cleanup ${m.decode_cleanup}, normalization ${m.input_normalization})`,
    `template     ${new TextEncoder().encode(m.chat_template).length} bytes`,
    `sample       ${JSON.stringify(sample)} -> ${codec.encode(sample).length} tokens`,
  ];
  console.log(lines.join("\n"));
}

if (import.meta.main) await runTask("codec:inspect", main);
