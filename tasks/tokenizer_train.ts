/**
 * `deno task tokenizer:train`: trains a deterministic byte-level BPE tokenizer on corpus files and writes its
 * Hugging Face tokenizer.json (canonical JSON). Never overwrites an existing file.
 */
import { canonical } from "../core/canonical.ts";
import { Progress, readWithProgress } from "../core/progress.ts";
import { trainBpe } from "../text/bpe_trainer.ts";
import { tokenizerJson } from "../text/tokenizer_json.ts";
import { parse, required, runTask, UsageError } from "./_cli.ts";

const HELP =
  `deno task tokenizer:train --corpus FILE [--corpus FILE ...] --vocab N --out tokenizer.json [--json]

Train a byte-level BPE tokenizer (special tokens <|endoftext|> <|im_start|> <|im_end|>, then the 256 bytes,
then merges) on UTF-8 corpus files. The same files and N always give the same bytes.

Options:
  --corpus FILE    a UTF-8 text file to train on (repeat for several)
  --vocab N        vocabulary size, 259 to 65536 (smaller if the corpus runs out of pairs)
  --out FILE       where to write tokenizer.json (refuses to overwrite)
  --json           progress as JSON lines on stderr (otherwise one live line on a terminal, plain lines
                   with rate and ETA when stderr is not a terminal)
  -h, --help       show this help`;

async function main(): Promise<void> {
  const { values, positionals } = parse(Deno.args, {
    corpus: { type: "string", multiple: true },
    vocab: { type: "string" },
    out: { type: "string" },
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const corpus = values.corpus ?? [];
  if (corpus.length === 0) throw new UsageError("--corpus is required");
  const vocabText = required(values.vocab, "vocab");
  const vocab = Number(vocabText);
  if (!/^[0-9]+$/.test(vocabText) || !Number.isSafeInteger(vocab)) {
    throw new UsageError(`--vocab must be an integer, got ${vocabText}`);
  }
  const out = required(values.out, "out");
  if (await exists(out)) {
    throw new UsageError(`Cannot write ${out}: the file exists and is never overwritten`);
  }
  const texts: string[] = [];
  for (const path of corpus) {
    try {
      const bytes = await readWithProgress(path, `reading ${path}`, { json: values.json === true });
      texts.push(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (e) {
      throw new UsageError(`Cannot read corpus ${path}: ${(e as Error).message}`);
    }
  }
  const started = performance.now();
  let merging: Progress | null = null;
  const model = trainBpe(texts, vocab, (size, target) => {
    merging ??= new Progress("merging pairs into tokens", target, { json: values.json === true });
    merging.update(size);
  });
  (merging as Progress | null)?.finish();
  const bytes = new TextEncoder().encode(canonical(tokenizerJson(model)));
  await Deno.writeFile(out, bytes, { createNew: true });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `wrote ${out}: ${model.vocab.length} tokens, ${model.merges.length} merges, ${bytes.length} bytes, ${seconds} s`,
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

if (import.meta.main) await runTask("tokenizer:train", main);
