/**
 * `deno task model:import (--gguf FILE | --hf DIR) --objects DIR`: import a Llama model (for example SmolLM2
 * from `deno task model:fetch-smollm2`, or a Hugging Face folder) into an object store: its text codec and its
 * model manifest with one safetensors object per component. Prints both roots.
 */
import type { JsonValue } from "../core/canonical.ts";
import { sha256Hex } from "../core/digest.ts";
import { Progress, readWithProgress } from "../core/progress.ts";
import { ObjectStore } from "../core/object_store.ts";
import { readGguf } from "../kernels/gguf.ts";
import { modelFromGguf } from "../kernels/gguf_model.ts";
import { tokenizerFromGguf } from "../kernels/gguf_tokenizer.ts";
import { checkPins, HF_FILES, modelFromHf, tokenizerFromHf } from "../kernels/hf_import.ts";
import { storeModel } from "../kernels/manifest.ts";
import type { Model } from "../kernels/model.ts";
import { buildCodec, type BuiltCodec } from "../text/codec_manifest.ts";
import { storeCodec } from "../text/codec.ts";
import { parse, runTask, UsageError } from "./_cli.ts";

const HELP = `deno task model:import (--gguf FILE | --hf DIR [--pins FILE]) [--objects DIR] [--json]

Import a Llama model into the object store DIR: its text codec and its model manifest with one safetensors
object per component. Prints:
  model_root <64 hex>   the model manifest's root (use with generate and chat)
  codec_root <64 hex>   the text codec's root (the manifest's tokenizer_root)

Sources:
  --gguf FILE   a llama-architecture GGUF (F32, F16, BF16, Q8_0, Q4_0 or Q4_1 tensors; byte-level BPE tokenizer
                with the smollm pre-tokenizer): tensors are dequantised to float32, Q/K rows are put back in
                rotate-half order and the tokenizer is rebuilt from the metadata
  --hf DIR      a Hugging Face folder: ${HF_FILES.join(", ")}
                (tied LlamaForCausalLM, one safetensors file in F32, BF16 or F16)
  --pins FILE   with --hf: a JSON object {"<file name>": "<sha256 hex>"} checked before importing

Example:
  deno task model:fetch-smollm2
  deno task model:import --gguf .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf
  deno task chat --model <model_root>

Options:
  --objects DIR    the object store folder (default .neuroshard/objects, created when missing)
  --json           progress as JSON lines on stderr (otherwise one live line on a terminal, plain lines
                   with rate and ETA when stderr is not a terminal)
  -h, --help       show this help`;

/** How progress is written (`--json` makes it JSON lines). */
let progressJson = false;

async function read(path: string): Promise<Uint8Array> {
  return await readWithProgress(path, `reading ${path}`, { json: progressJson }).catch((e) => {
    throw new Error(`Cannot import model: cannot read ${path}: ${(e as Error).message}`);
  });
}

async function fromGguf(path: string): Promise<{ model: Model; codec: BuiltCodec; origin: JsonValue }> {
  const bytes = await read(path);
  const sha256 = sha256Hex(bytes);
  const file = readGguf(bytes);
  const t = tokenizerFromGguf(file);
  const codec = buildCodec(t.tokenizer, t.chatTemplate, t.special);
  let progress: Progress | null = null;
  const model = modelFromGguf(file, (done, total) => {
    progress ??= new Progress("dequantising tensors", total, { json: progressJson });
    progress.update(done);
    if (done === total) progress.finish();
  });
  return { model, codec, origin: { format: "gguf", file: path.split("/").pop()!, sha256 } };
}

async function fromHf(dir: string, pinsPath: string | undefined) {
  const files: Record<string, Uint8Array> = {};
  for (const name of HF_FILES) {
    files[name] = await read(`${dir}/${name}`);
  }
  if (pinsPath !== undefined) {
    const pins = JSON.parse(new TextDecoder().decode(await read(pinsPath)));
    if (typeof pins !== "object" || pins === null || Array.isArray(pins)) {
      throw new Error(`Cannot import model: ${pinsPath} is not a JSON object of file name to SHA-256`);
    }
    checkPins(files, pins);
    console.error(`${Object.keys(pins).length} pinned SHA-256 values match`);
  }
  const t = tokenizerFromHf(files["tokenizer.json"]!, files["tokenizer_config.json"]!);
  const codec = buildCodec(t.tokenizer, t.chatTemplate, t.special);
  console.error("converting tensors to float32");
  const model = modelFromHf(files["config.json"]!, files["model.safetensors"]!);
  const sha256 = Object.fromEntries(HF_FILES.map((n) => [n, sha256Hex(files[n]!)]));
  return { model, codec, origin: { format: "hf", sha256 } };
}

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    gguf: { type: "string" },
    hf: { type: "string" },
    pins: { type: "string" },
    objects: { type: "string", default: ".neuroshard/objects" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return console.log(HELP);
  progressJson = values.json === true;
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if ((values.gguf === undefined) === (values.hf === undefined)) {
    throw new UsageError("give exactly one of --gguf FILE or --hf DIR");
  }
  if (values.pins !== undefined && values.hf === undefined) throw new UsageError("--pins goes with --hf");

  const { model, codec, origin } = values.gguf !== undefined
    ? await fromGguf(values.gguf)
    : await fromHf(values.hf!.replace(/\/+$/, ""), values.pins);

  await Deno.mkdir(values.objects, { recursive: true });
  const store = new ObjectStore(values.objects);
  const codecRoot = await storeCodec(store, codec);
  console.error("storing components");
  const { root, manifest } = await storeModel(store, model, { origin, tokenizer_root: codecRoot });
  console.error(
    `stored ${manifest.parameters} parameters in ${Object.keys(manifest.components).length} components`,
  );
  console.log(`model_root ${root}`);
  console.log(`codec_root ${codecRoot}`);
}

if (import.meta.main) await runTask("model:import", main);
