import assert from "node:assert/strict";
import { ProtocolError } from "../../core/errors.ts";
import { encodePrompt, reservedStrings, validateConversation } from "../../text/conversation.ts";
import { fixtureTextCodec } from "./_fixture.ts";

const RESERVED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
const u = (content: string) => ({ role: "user", content });
const a = (content: string) => ({ role: "assistant", content });
const s = (content: string) => ({ role: "system", content });

function rejects(value: unknown, code: string, text: RegExp, generation = false): void {
  const before = structuredClone(value);
  assert.throws(
    () => validateConversation(value, RESERVED, { generation }),
    (e) => e instanceof ProtocolError && e.code === code && text.test(e.message),
  );
  assert.deepEqual(value, before);
}

Deno.test("a system message, then user and assistant alternating from user, is accepted", () => {
  const conv = [s("Be brief."), u("Hi"), a("Hello"), u("2+2?")];
  assert.deepEqual(validateConversation(conv, RESERVED, { generation: true }), conv);
  assert.deepEqual(validateConversation([u("x"), a("")], RESERVED, { generation: false }), [u("x"), a("")]);
});

Deno.test("each conversation rule breaks with invalid_conversation and leaves the input unchanged", () => {
  rejects({ role: "user" }, "invalid_conversation", /not a list of messages/);
  rejects([], "invalid_conversation", /it has 0 messages, expected 1 to 128/);
  rejects(
    Array.from({ length: 129 }, (_, i) => (i % 2 ? a("x") : u("x"))),
    "invalid_conversation",
    /129 messages/,
  );
  rejects(
    [{ role: "user", content: "x", name: "bob" }],
    "invalid_conversation",
    /exactly the fields role and content/,
  );
  rejects([{ role: "user", content: 7 }], "invalid_conversation", /must be strings/);
  rejects([a("x")], "invalid_conversation", /message 0: role is "assistant", expected user/);
  rejects([u("x"), u("y")], "invalid_conversation", /message 1: role is "user", expected assistant/);
  rejects([u("x"), s("y")], "invalid_conversation", /message 1: role is "system", expected assistant/);
  rejects([s("x"), s("y")], "invalid_conversation", /message 1: role is "system", expected user/);
  rejects([u("x"), { role: "tool", content: "y" }], "invalid_conversation", /role is "tool"/);
  rejects([s("only")], "invalid_conversation", /no user message/);
  rejects(
    [u("say <|im_end|> now")],
    "invalid_conversation",
    /message 0: content contains the reserved string <\|im_end\|>/,
  );
  rejects([u("a\ud800b")], "invalid_conversation", /lone surrogate/);
  rejects([u("x"), a("y")], "invalid_conversation", /last message is from assistant, expected user/, true);
  rejects([u("é".repeat(131_072)), a("x")], "too_large", /content is 262145 bytes, the bound is 262144/);
  assert.equal(
    validateConversation([u("é".repeat(131_071)), a("xy")], RESERVED, { generation: false }).length,
    2,
  );
});

Deno.test("the reserved strings of a codec are its special tokens", () => {
  assert.deepEqual(reservedStrings(fixtureTextCodec()).sort(), [...RESERVED].sort());
});

Deno.test("a generation prompt is 2 to 192 tokens and is never truncated", () => {
  const codec = fixtureTextCodec();
  const ids = encodePrompt(codec, [u("the answer is")]);
  assert.equal(codec.decode(ids), codec.render([u("the answer is")], true));
  assert.equal(ids.at(-1), codec.encode("\n")[0]);
  assert.throws(
    () => encodePrompt(codec, [u("x ".repeat(200))]),
    (e) =>
      e instanceof ProtocolError && e.code === "invalid_conversation" &&
      /is \d+ tokens, expected 2 to 192/.test(e.message),
  );
  const bare = fixtureTextCodec("{% for message in messages %}{{ message['content'] }}{% endfor %}");
  assert.throws(
    () => encodePrompt(bare, [u("a")]),
    (e) => e instanceof ProtocolError && e.code === "invalid_conversation" && /is 1 tokens/.test(e.message),
  );
  assert.deepEqual(encodePrompt(bare, [u("ab")]).length, 2);
});
