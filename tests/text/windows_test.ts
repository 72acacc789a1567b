import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { makeBatch, validateBatch } from "../../text/batch.ts";
import { answers, buildWindows, IGNORE, type Window } from "../../text/windows.ts";
import { fixtureTextCodec } from "./_fixture.ts";

const codec = fixtureTextCodec();
const EOS = codec.manifest.special_ids.eos;
const u = (content: string) => ({ role: "user", content });
const a = (content: string) => ({ role: "assistant", content });

const targetsOf = (w: Window) => w.tokens.filter((_, i) => w.labels[i] !== IGNORE);

Deno.test("the answer is the tokens after the generation prefix up to and including the first EOS", () => {
  const conv = [u("count letters in banana"), a("there are six letters"), u("reverse word"), a("drow")];
  const turns = answers(codec, conv);
  assert.deepEqual(turns.map((t) => t.message), [1, 3]);
  assert.deepEqual(turns[0]!.answer, [...codec.encode("there are six letters"), EOS]);
  assert.deepEqual(turns[1]!.answer, [...codec.encode("drow"), EOS]);
  assert.deepEqual(turns[1]!.prefix, codec.encode(codec.render(conv.slice(0, 3), true)));
});

Deno.test("a two-answer conversation has every target covered exactly once", () => {
  const conv = [
    u("the answer is"),
    a("seven apples cost three coins in banana"),
    u("convert"),
    a("metres to centimetres"),
  ];
  const doc = buildWindows(codec, conv, { context: 16, response: 5, maxWindows: 100 });
  const turns = answers(codec, conv);
  for (const turn of turns) {
    const covered = doc.windows.filter((w) => w.message === turn.message).sort((x, y) => x.depth - y.depth)
      .flatMap(targetsOf);
    assert.deepEqual(covered, turn.answer);
  }
  assert.equal(doc.total, turns[0]!.answer.length + turns[1]!.answer.length);
  assert.equal(doc.scored, doc.total);
  assert.equal(doc.omitted, 0);
  for (const w of doc.windows) {
    assert.equal(w.tokens.length, 21);
    assert.equal(w.labels.length, 21);
  }
});

Deno.test("every turn's first chunk comes before any later chunk and the omitted count is reported", () => {
  const conv = [u("q"), a("the answer is seven apples"), u("r"), a("reverse word count letters")];
  const turns = answers(codec, conv);
  assert.ok(turns.every((t) => t.answer.length > 4));
  const doc = buildWindows(codec, conv, { context: 8, response: 4, maxWindows: 3 });
  assert.deepEqual(doc.windows.map((w) => [w.message, w.depth]), [[1, 0], [3, 0], [1, 1]]);
  assert.equal(doc.scored, 12);
  assert.equal(doc.total, turns[0]!.answer.length + turns[1]!.answer.length);
  assert.equal(doc.omitted, doc.total - 12);
});

Deno.test("a window's prompt is the context tokens just before its target, and padding is EOS with -100", () => {
  const conv = [u("count letters"), a("the answer is seven")];
  const [turn] = answers(codec, conv);
  const doc = buildWindows(codec, conv, { context: 6, response: 3, maxWindows: 4 });
  const w = doc.windows[1]!;
  const before = [...turn!.prefix, ...turn!.answer.slice(0, 3)];
  assert.deepEqual(w.tokens.slice(0, 6), before.slice(-6));
  assert.deepEqual(w.labels.slice(0, 6), Array(6).fill(IGNORE));
  const last = doc.windows.at(-1)!;
  const n = targetsOf(last).length;
  assert.deepEqual(last.tokens.slice(6 + n), Array(3 - n).fill(EOS));
  assert.deepEqual(last.labels.slice(6 + n), Array(3 - n).fill(IGNORE));
});

Deno.test("a one-word answer is kept as its word and EOS", () => {
  const doc = buildWindows(codec, [u("is it"), a("yes")]);
  assert.equal(doc.windows.length, 1);
  assert.deepEqual(targetsOf(doc.windows[0]!), [...codec.encode("yes"), EOS]);
  assert.equal(doc.windows[0]!.tokens.length, 128);
  assert.deepEqual([doc.total, doc.scored, doc.omitted], [
    codec.encode("yes").length + 1,
    codec.encode("yes").length + 1,
    0,
  ]);
});

Deno.test("no EOS is inserted at a chunk boundary: only the final chunk ends with EOS", () => {
  const doc = buildWindows(codec, [u("q"), a("the answer is seven apples cost three coins")], {
    context: 4,
    response: 3,
    maxWindows: 10,
  });
  assert.ok(doc.windows.length >= 3);
  for (const w of doc.windows.slice(0, -1)) {
    const t = targetsOf(w);
    assert.equal(t.length, 3);
    assert.ok(!t.includes(EOS), `chunk ${w.depth} has an EOS target`);
  }
  assert.equal(targetsOf(doc.windows.at(-1)!).at(-1), EOS);
});

Deno.test("empty assistant turns have no answer and an evaluation document with omissions is rejected", () => {
  assert.deepEqual(buildWindows(codec, [u("q"), a(""), u("r"), a("yes")]).windows.map((w) => w.message), [3]);
  const conv = [u("q"), a("the answer is seven apples cost three coins")];
  assert.equal(buildWindows(codec, conv, { context: 4, response: 64, maxWindows: 1 }, true).omitted, 0);
  assert.throws(
    () => buildWindows(codec, conv, { context: 4, response: 3, maxWindows: 2 }, true),
    (e) =>
      e instanceof ProtocolError && e.code === "incomplete_evaluation" &&
      /do not fit in 2 windows/.test(e.message),
  );
});

Deno.test("window settings out of bounds are rejected with invalid_batch", () => {
  for (
    const o of [
      { context: 0, response: 64, maxWindows: 4 },
      { context: 64, response: 0, maxWindows: 4 },
      { context: 200, response: 57, maxWindows: 4 },
      { context: 64, response: 64, maxWindows: 0 },
    ]
  ) {
    assert.throws(
      () => buildWindows(codec, [u("q"), a("y")], o),
      (e) => e instanceof ProtocolError && e.code === "invalid_batch",
    );
  }
  assert.equal(
    buildWindows(codec, [u("q"), a("y")], { context: 200, response: 56, maxWindows: 4 }).windows[0]!.tokens
      .length,
    256,
  );
});

Deno.test("windows make a valid batch; each batch rule breaks with its code and the batch is unchanged", () => {
  const doc = buildWindows(codec, [u("q"), a("the answer is seven"), u("r"), a("drow")]);
  const batch = makeBatch(codec.root, doc.windows, codec.manifest.vocabulary);
  assert.equal(batch.rows.length, 2);
  const bad = (
    mutate: (b: { codec: string; rows: { tokens: number[]; labels: number[] }[] }) => void,
    code: string,
    text: RegExp,
  ) => {
    const b = structuredClone(batch) as { codec: string; rows: { tokens: number[]; labels: number[] }[] };
    mutate(b);
    const before = structuredClone(b);
    assert.throws(
      () => validateBatch(b, codec.root, 300),
      (e) => e instanceof ProtocolError && e.code === code && text.test(e.message),
    );
    assert.deepEqual(b, before);
  };
  bad((b) => (b.codec = "ab".repeat(32)), "codec_mismatch", /its codec is abab/);
  bad((b) => (b.rows = [...b.rows, ...b.rows, b.rows[0]!]), "invalid_batch", /5 rows, expected 1 to 4/);
  bad((b) => (b.rows = []), "invalid_batch", /0 rows/);
  bad(
    (b) => b.rows[1]!.tokens.push(2) && b.rows[1]!.labels.push(-100),
    "invalid_batch",
    /length is 129, expected 128/,
  );
  bad(
    (
      b,
    ) => (b.rows = [1, 2, 3].map(() => ({
      tokens: Array(200).fill(5),
      labels: [-100, ...Array(199).fill(5)],
    }))),
    "invalid_batch",
    /600 tokens exceeds the bound of 512/,
  );
  bad(
    (b) => (b.rows = [{ tokens: Array(257).fill(5), labels: [-100, ...Array(256).fill(5)] }]),
    "invalid_batch",
    /length is 257, expected 1 to 256/,
  );
  bad((b) => (b.rows[0]!.labels[70] = 7), "invalid_batch", /label 70 is 7, token is/);
  bad((b) => (b.rows[0]!.tokens[3] = 300), "invalid_batch", /token 3 is 300, outside the vocabulary of 300/);
  bad(
    (b) => (b.rows = b.rows.map((r) => ({ tokens: r.tokens, labels: r.labels.map(() => -100) }))),
    "invalid_batch",
    /no scored target/,
  );
  bad((b) => (b.rows[0]!.labels[0] = b.rows[0]!.tokens[0]!), "invalid_batch", /position 0 is scored/);
  bad(
    (b) => ((b as unknown as Record<string, unknown>).extra = 1),
    "invalid_batch",
    /exactly the fields codec and rows/,
  );
});
