import assert from "node:assert/strict";
import { Tokenizer } from "@huggingface/tokenizers";
import { canonical } from "../../core/canonical.ts";
import { sha256Hex } from "../../core/digest.ts";
import { ProtocolError } from "../../core/errors.ts";
import { MIN_VOCAB, SPECIAL_TOKENS, trainBpe } from "../../text/bpe_trainer.ts";
import { BYTE_TO_CHAR, preTokenize } from "../../text/byte_level.ts";
import { tokenizerJson } from "../../text/tokenizer_json.ts";

Deno.test("vocabulary starts with the three special tokens then the 256 bytes in byte order", () => {
  const model = trainBpe(["x"], 300);
  assert.deepEqual(model.vocab.slice(0, 3), [...SPECIAL_TOKENS]);
  assert.deepEqual(model.vocab.slice(3, 259), [...BYTE_TO_CHAR]);
  assert.equal(BYTE_TO_CHAR[0x20], "Ġ");
  assert.equal(BYTE_TO_CHAR[0x0a], "Ċ");
  assert.equal(MIN_VOCAB, 259);
});

Deno.test("equal counts are broken by the left string, then the right string, in byte order", () => {
  // Pairs (b,a) (Ġ,a) (a,b) all count 1: "a" < "b" < "Ġ" by code point.
  assert.deepEqual(trainBpe(["ba ab"], 262).merges, [["a", "b"], ["b", "a"], ["Ġ", "ab"]]);
  // Same left string "a": right "b" comes before right "c".
  assert.deepEqual(trainBpe(["ac ab"], 260).merges, [["a", "b"]]);
  // The order of the corpus does not matter (same pre-tokens "Ġab" and "ba", other order).
  assert.deepEqual(trainBpe([" ab", "ba"], 262).merges, [["a", "b"], ["b", "a"], ["Ġ", "ab"]]);
});

Deno.test("the most frequent pair is merged first, weighted by pre-token frequency", () => {
  const model = trainBpe(["ab zz zz zz"], 261);
  assert.deepEqual(model.merges, [["z", "z"], ["Ġ", "zz"]]);
  assert.deepEqual(model.vocab.slice(259), ["zz", "Ġzz"]);
});

Deno.test("every vocabulary string is unique and every merge result is in the vocabulary", () => {
  const words = ["alpha", "alps", "phase", "sea", "seal", "ease", "east", "stale", "tales", "least"];
  let x = 12345;
  let text = "";
  for (let i = 0; i < 3000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    text += words[x % words.length]! + (x % 5 === 0 ? "\n" : " ");
  }
  const model = trainBpe([text], 400);
  assert.equal(new Set(model.vocab).size, model.vocab.length);
  const vocab = new Set(model.vocab);
  for (const [a, b] of model.merges) assert.ok(vocab.has(a + b), `${a}+${b} missing`);
  assert.ok(model.merges.length >= model.vocab.length - 259);
});

Deno.test("digits are single pre-tokens and no merge crosses a digit or a special token", () => {
  assert.deepEqual(preTokenize("a12 b", []), ["a", "1", "2", "Ġb"]);
  assert.deepEqual(preTokenize("ab<|im_end|>cd", SPECIAL_TOKENS), ["ab", "cd"]);
  assert.deepEqual(trainBpe(["123 123 4444"], 300).merges, []);
  const model = trainBpe(["ab<|im_end|>ab<|im_start|>"], 300);
  assert.deepEqual(model.merges, [["a", "b"]]);
  assert.equal(model.vocab.length, 260);
});

Deno.test("vocabulary sizes outside 259..65536 are rejected with invalid_tokenizer", () => {
  for (const size of [258, 65_537, 300.5]) {
    assert.throws(
      () => trainBpe(["abc"], size),
      (e) => e instanceof ProtocolError && e.code === "invalid_tokenizer" && e.message.includes(String(size)),
    );
  }
});

Deno.test("a trained tokenizer.json loads in @huggingface/tokenizers and round-trips text", () => {
  const corpus = "the cat sat on the mat; the dog sat on the log. 2024-01-02 café 🙂\r\n\tend";
  const json = tokenizerJson(trainBpe([corpus.repeat(20)], 320));
  const tokenizer = new Tokenizer(json, { clean_up_tokenization_spaces: false });
  const ids = tokenizer.encode("the cat sat on the log 🙂", { add_special_tokens: false }).ids;
  assert.equal(tokenizer.decode(ids, { clean_up_tokenization_spaces: false }), "the cat sat on the log 🙂");
  assert.ok(ids.length < 24, `expected merges to shorten the text, got ${ids.length} ids`);
  assert.deepEqual(tokenizer.encode("<|im_start|>hi<|im_end|>", { add_special_tokens: false }).ids.at(0), 1);
});

const taskEnv = { NO_COLOR: "1" };
async function train(corpus: string, out: string, vocab = "400"): Promise<Deno.CommandOutput> {
  return await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-write",
      "--allow-env",
      "tasks/tokenizer_train.ts",
      "--corpus",
      corpus,
      "--vocab",
      vocab,
      "--out",
      out,
    ],
    env: taskEnv,
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test("tokenizer:train gives identical bytes in two processes and refuses to overwrite", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bpe-train-" });
  try {
    const corpus = `${dir}/corpus.txt`;
    let text = "";
    for (let i = 0; i < 2000; i++) {
      text += `row ${i}: the quick brown fox ${i % 7} jumps over ${i % 13} lazy dogs\n`;
    }
    await Deno.writeTextFile(corpus, text);
    const [a, b] = await Promise.all([train(corpus, `${dir}/a.json`), train(corpus, `${dir}/b.json`)]);
    assert.equal(a.code, 0, new TextDecoder().decode(a.stderr));
    assert.equal(b.code, 0, new TextDecoder().decode(b.stderr));
    const bytesA = await Deno.readFile(`${dir}/a.json`);
    const bytesB = await Deno.readFile(`${dir}/b.json`);
    assert.equal(sha256Hex(bytesA), sha256Hex(bytesB));
    assert.equal(new TextDecoder().decode(bytesA), canonical(tokenizerJson(trainBpe([text], 400))));
    const again = await train(corpus, `${dir}/a.json`, "300");
    assert.equal(again.code, 2);
    assert.match(new TextDecoder().decode(again.stderr), /never overwritten/);
    assert.equal(sha256Hex(await Deno.readFile(`${dir}/a.json`)), sha256Hex(bytesA));
    const bad = await train(corpus, `${dir}/c.json`, "12");
    assert.equal(bad.code, 1);
    assert.match(new TextDecoder().decode(bad.stderr), /invalid_tokenizer/);
    await assert.rejects(Deno.stat(`${dir}/c.json`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tokenizer:train prints help and rejects missing or malformed options with exit code 2", async () => {
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-read", "--allow-write", "--allow-env", "tasks/tokenizer_train.ts", ...args],
      env: taskEnv,
      stdout: "piped",
      stderr: "piped",
    }).output();
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.match(new TextDecoder().decode(help.stdout), /--vocab N {8}vocabulary size, 259 to 65536/);
  const noCorpus = await run(["--vocab", "300", "--out", "/nonexistent/x.json"]);
  assert.equal(noCorpus.code, 2);
  assert.match(new TextDecoder().decode(noCorpus.stderr), /--corpus is required/);
  const badVocab = await run(["--corpus", "deno.json", "--vocab", "4k", "--out", "/nonexistent/x.json"]);
  assert.equal(badVocab.code, 2);
  assert.match(new TextDecoder().decode(badVocab.stderr), /--vocab must be an integer, got 4k/);
  const missing = await run([
    "--corpus",
    "/nonexistent/corpus.txt",
    "--vocab",
    "300",
    "--out",
    "/nonexistent/x.json",
  ]);
  assert.equal(missing.code, 2);
  assert.match(new TextDecoder().decode(missing.stderr), /Cannot read corpus \/nonexistent\/corpus.txt/);
});

Deno.test("trainBpe reports each merge's vocabulary size to onProgress and trains the same tokenizer with it", () => {
  const texts = ["the cat sat on the mat", "the hat that the cat had", "a mat, a hat, a cat"];
  const sizes: number[] = [];
  const watched = trainBpe(texts, 300, (size, target) => {
    assert.equal(target, 300);
    sizes.push(size);
  });
  assert.deepEqual(watched, trainBpe(texts, 300));
  assert.equal(sizes.length, watched.merges.length);
  assert.equal(sizes.at(-1), watched.vocab.length);
  assert.ok(sizes.every((s, i) => i === 0 || s >= sizes[i - 1]!));
});
