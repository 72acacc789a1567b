/**
 * `deno task model:import --gguf FILE --objects DIR`: import a llama GGUF model (for example SmolLM2 from
 * `deno task model:fetch-smollm2`) into an object store: its text codec (tokenizer rebuilt from the GGUF
 * metadata) and its model manifest with one safetensors object per component. Prints both roots.
 */
import { sha256Hex } from "../core/digest.ts";
import { ObjectStore } from "../core/object_store.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../kernels/gguf_tokenizer.ts";
import { storeModel } from "../kernels/manifest.ts";
import { buildCodec } from "../text/codec_manifest.ts";
import { storeCodec } from "../text/codec.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task model:import --gguf FILE --objects DIR

Import a llama-architecture GGUF model (F32, F16, BF16, Q8_0, Q4_0 or Q4_1 tensors, byte-level BPE tokenizer
with the smollm pre-tokenizer) into the object store DIR: the tensors are dequantised to float32, the Q/K rows
are put back in rotate-half order, and the tokenizer is rebuilt as a text codec. Prints:
  model_root <64 hex>   the model manifest's root (use with generate and chat)
  codec_root <64 hex>   the text codec's root (the manifest's tokenizer_root)

Example:
  deno task model:fetch-smollm2
  deno task model:import --gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf --objects .neuroshard/objects

Options:
  --gguf FILE      the GGUF file
  --objects DIR    the object store folder (created when missing)
  -h, --help       show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    gguf: { type: "string" },
    objects: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const path = required(values.gguf, "gguf");
  const objects = required(values.objects, "objects");

  console.error(`reading ${path}`);
  const bytes = await Deno.readFile(path).catch((e) => {
    throw new Error(`Cannot import model: cannot read ${path}: ${(e as Error).message}`);
  });
  const sha256 = sha256Hex(bytes);
  const file = readGguf(bytes);
  const t = tokenizerFromGguf(file);
  const codec = buildCodec(t.tokenizer, t.chatTemplate, t.special);

  const live = Deno.stderr.isTerminal();
  const model = modelFromGguf(file, (done, total, name) => {
    if (!live && done < total) return;
    const line = `dequantising ${String(done).padStart(String(total).length)}/${total} ${name}`;
    Deno.stderr.writeSync(new TextEncoder().encode(`\r${line.padEnd(60)}${done === total ? "\n" : ""}`));
  });

  await Deno.mkdir(objects, { recursive: true });
  const store = new ObjectStore(objects);
  const codecRoot = await storeCodec(store, codec);
  console.error("storing components");
  const origin = { format: "gguf", file: path.split("/").pop()!, sha256 };
  const { root, manifest } = await storeModel(store, model, { origin, tokenizer_root: codecRoot });
  console.error(
    `stored ${manifest.parameters} parameters in ${Object.keys(manifest.components).length} components`,
  );
  console.log(`model_root ${root}`);
  console.log(`codec_root ${codecRoot}`);
}

if (import.meta.main) await runTask("model:import", main);
