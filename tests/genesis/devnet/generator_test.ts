import assert from "node:assert/strict";
import { ATLAS, WORDS } from "../../../genesis/devnet/families.ts";
import {
  DEVNET_SOURCE,
  devnetRow,
  devnetRowInfo,
  devnetRows,
  GENERATOR_VERSION,
} from "../../../genesis/devnet/generator.ts";
import { hashString, mix32, rowRandom } from "../../../genesis/devnet/prng.ts";
import { validateConversation } from "../../../text/conversation.ts";

const RESERVED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

Deno.test("rows are pinned by generator version and seed", () => {
  assert.equal(GENERATOR_VERSION, "neuroshard-devnet-chat-v1");
  assert.deepEqual(devnetRow(DEVNET_SOURCE, 0), [
    { role: "user", content: "Compute 113 - 66." },
    { role: "assistant", content: "113 - 66 = 47" },
  ]);
  assert.deepEqual(devnetRow(DEVNET_SOURCE, 2), [
    { role: "user", content: "What is 411 - 130?" },
    { role: "assistant", content: "411 - 130 = 281" },
    { role: "user", content: "Now multiply that by 5." },
    { role: "assistant", content: "281 * 5 = 1405" },
  ]);
  assert.equal(hashString(""), 0x811c9dc5);
  assert.equal(mix32(1), 0x514e28b7);
});

Deno.test("row i is computed directly: any order, any distance, same rows", () => {
  const forward = devnetRows(DEVNET_SOURCE, 0, 50);
  const backward = Array.from({ length: 50 }, (_, i) => devnetRow(DEVNET_SOURCE, 49 - i)).reverse();
  assert.deepEqual(backward, forward);
  const far = 2 ** 40 + 17;
  assert.deepEqual(devnetRow(DEVNET_SOURCE, far), devnetRow(DEVNET_SOURCE, far));
  assert.notDeepEqual(devnetRow(DEVNET_SOURCE, far), devnetRow(DEVNET_SOURCE, 17));
  assert.notDeepEqual(devnetRows({ ...DEVNET_SOURCE, seed: "other" }, 0, 10), forward.slice(0, 10));
  assert.throws(() => devnetRow(DEVNET_SOURCE, -1), RangeError);
  assert.throws(() => devnetRow(DEVNET_SOURCE, 1.5), RangeError);
  assert.throws(() => devnetRow({ ...DEVNET_SOURCE, generator: "v0" }, 0), /generator is v0/);
});

Deno.test("the row random source stays in range and uses every value", () => {
  const r = rowRandom("v", "s", 3);
  const seen = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    const x = r.between(5, 14);
    assert.ok(x >= 5 && x <= 14);
    seen.add(x);
  }
  assert.equal(seen.size, 10);
  assert.throws(() => r.below(0), RangeError);
});

Deno.test("the first 3000 rows are valid conversations, half single-turn, with every family and correct answers", () => {
  const kinds = new Map<string, number>();
  const families = new Set<string>();
  let systems = 0;
  for (let row = 0; row < 3000; row++) {
    const { messages, info } = devnetRowInfo(DEVNET_SOURCE, row);
    validateConversation(messages, RESERVED, { generation: false });
    kinds.set(info.kind, (kinds.get(info.kind) ?? 0) + 1);
    info.families.forEach((f) => families.add(f));
    if (info.system) systems++;
    for (let i = 0; i + 1 < messages.length; i++) {
      if (messages[i]!.role === "user") checkAnswer(messages[i]!.content, messages[i + 1]!.content, row);
    }
  }
  const single = kinds.get("single")!;
  assert.ok(single > 1350 && single < 1650, `single-turn rows: ${single}`);
  assert.ok(kinds.get("follow_up")! > 600 && kinds.get("two_questions")! > 600);
  assert.deepEqual([...families].sort(), [
    "arithmetic",
    "conversion",
    "follow_up",
    "letter_count",
    "lookup",
    "reversal",
  ]);
  assert.ok(systems > 250 && systems < 500, `system rows: ${systems}`);
});

/** Recomputes the answer of every independent question from its text. */
function checkAnswer(question: string, answer: string, row: number): void {
  const where = `row ${row}: ${question} -> ${answer}`;
  let m = question.match(/^(?:What is |Compute )?(\d+) ([-+*]) (\d+)(?:\?|\.| = \?)$/);
  if (m) {
    const [a, b] = [Number(m[1]), Number(m[3])];
    const v = m[2] === "+" ? a + b : m[2] === "-" ? a - b : a * b;
    assert.equal(answer, `${a} ${m[2]} ${b} = ${v}`, where);
    assert.ok(v >= 0, where);
    return;
  }
  m = question.match(/^How many times does the letter "(.)" appear in "(\w+)"\?$/);
  if (m) {
    const n = [...m[2]!].filter((c) => c === m![1]).length;
    assert.equal(
      answer,
      `The letter "${m[1]}" appears ${n === 1 ? "once" : `${n} times`} in "${m[2]}".`,
      where,
    );
    return;
  }
  m = question.match(/^Reverse the word "(\w+)"\.$/);
  if (m) {
    assert.equal(answer, [...m[1]!].reverse().join(""), where);
    return;
  }
  m = question.match(/^Convert (\d+) (\w+) to (\w+)\.$/);
  if (m) {
    assert.match(answer, new RegExp(`^${m[1]} \\w+ is \\d+ ${m[3]}\\.$`), where);
    return;
  }
  m = question.match(/^In the atlas, what is the capital of (\w+)\?$/);
  if (m) {
    assert.equal(answer, `The capital of ${m[1]} is ${ATLAS.find((a) => a[0] === m![1])![1]}.`, where);
    return;
  }
  if (/^(Which river|What does)/.test(question) || /^(Now|And|How many letters)/.test(question)) return;
  assert.fail(`unknown question: ${where}`);
}

Deno.test("the word list and atlas are fixed", () => {
  assert.equal(WORDS.length, 60);
  assert.equal(ATLAS.length, 12);
});
