/**
 * Text throughput (issue 4): encode tokens per second with the devnet codec, response windows per second, and
 * the trainer's time for 4,096 pieces on 1 MB. Run with `deno task bench` or
 * `deno bench --allow-read --allow-env bench/text_bench.ts`; divide the printed counts by the mean time.
 */
import type { JsonObject } from "../core/canonical.ts";
import { buildDevnetCodec, devnetCorpus } from "../genesis/devnet/codec.ts";
import { DEVNET_SOURCE, devnetRow } from "../genesis/devnet/generator.ts";
import { trainBpe } from "../text/bpe_trainer.ts";
import { TextCodec } from "../text/codec.ts";
import { buildWindows } from "../text/windows.ts";

const built = buildDevnetCodec(DEVNET_SOURCE).codec;
const codec = TextCodec.fromParts(built.manifest as unknown as JsonObject, built.backend, built.root);

// ~100 KB of rendered devnet conversations (rows the tokenizer was not trained on).
const text = devnetCorpus({ ...DEVNET_SOURCE, seed: "bench" }, 400).join("");
const tokens = codec.encode(text).length;
const conversations = Array.from({ length: 100 }, (_, i) => devnetRow(DEVNET_SOURCE, 50_000 + i));
const windows = conversations.reduce((n, c) => n + buildWindows(codec, c).windows.length, 0);

// 1 MB of varied made-up words so that 4,096 pieces can be learnt.
const SYLLABLES = [
  "ka",
  "lo",
  "mi",
  "ra",
  "ven",
  "tor",
  "sil",
  "dun",
  "bre",
  "qua",
  "zen",
  "fal",
  "mor",
  "ith",
  "el",
  "ost",
  "par",
  "ny",
  "gri",
  "sha",
  "wen",
  "dor",
  "ul",
  "bex",
  "cai",
  "tri",
  "lum",
  "ash",
  "ve",
  "rho",
  "на",
  "ко",
  "ст",
  "ми",
  "λα",
  "κο",
  "μη",
  "שָׁ",
  "לו",
  "مر",
  "حب",
  "你",
  "好",
  "3",
  "42",
  ",",
  ".",
];
let x = 7;
const rand = (n: number) => {
  x = (Math.imul(x, 1103515245) + 12345) >>> 0;
  return (x >>> 8) % n;
};
const words = Array.from({ length: 20_000 }, () => {
  let w = "";
  for (let k = 2 + rand(3); k > 0; k--) w += SYLLABLES[rand(SYLLABLES.length)];
  return w;
});
let corpus = "";
while (corpus.length < 830_000) {
  corpus += words[Math.min(rand(words.length), rand(words.length))] + (rand(8) ? " " : ".\n");
}
console.log(
  `encode text: ${text.length} chars -> ${tokens} tokens; windows: ${windows} from 100 conversations`,
);
console.log(
  `trainer corpus: ${new TextEncoder().encode(corpus).length} bytes, ${
    trainBpe([corpus], 4096).vocab.length
  } pieces`,
);

Deno.bench(`encode ${tokens} tokens of devnet text`, { group: "text" }, () => {
  codec.encode(text);
});
Deno.bench(`cut ${windows} response windows from 100 conversations`, { group: "text" }, () => {
  for (const c of conversations) buildWindows(codec, c);
});
Deno.bench("train 4,096 pieces on 1 MB", { group: "trainer", n: 3, warmup: 0 }, () => {
  trainBpe([corpus], 4096);
});
