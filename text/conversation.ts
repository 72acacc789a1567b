/**
 * Conversations (PROTOCOL §11): 1–128 messages `{role, content}`, an optional first system message, then user
 * and assistant alternating from user; content at most 256 KiB in total and never containing a special-token
 * string; a conversation for generation ends with a user message and its encoded prompt is 2–192 tokens (never
 * truncated). Every rule breaks with `invalid_conversation` (or `too_large` for the byte bound).
 *
 * @example
 * ```ts
 * import { validateConversation } from "./conversation.ts";
 * const messages = validateConversation([{ role: "user", content: "Hi" }], ["<|im_end|>"], { generation: true });
 * ```
 */
import { hasExactKeys, isObject } from "../core/canonical.ts";
import { ProtocolError } from "../core/errors.ts";
import {
  MAX_CONVERSATION_CONTENT_BYTES,
  MAX_CONVERSATION_MESSAGES,
  MAX_PROMPT_TOKENS,
  MIN_PROMPT_TOKENS,
} from "../core/limits.ts";
import type { TextCodec } from "./codec.ts";
import { type ChatMessage, utf8Length } from "./template_render.ts";

function fail(message: string): never {
  throw new ProtocolError("invalid_conversation", message);
}

/**
 * Checks a conversation value and returns it typed. `reserved` are the strings content may never contain
 * (every special token of the codec); with `generation` the last message must be from the user.
 */
export function validateConversation(
  value: unknown,
  reserved: readonly string[],
  options: { generation: boolean },
): ChatMessage[] {
  if (!Array.isArray(value)) fail("Cannot accept conversation: it is not a list of messages");
  if (value.length < 1 || value.length > MAX_CONVERSATION_MESSAGES) {
    fail(
      `Cannot accept conversation: it has ${value.length} messages, expected 1 to ${MAX_CONVERSATION_MESSAGES}`,
    );
  }
  let bytes = 0;
  const messages: ChatMessage[] = [];
  value.forEach((m: unknown, i: number) => {
    if (!isObject(m) || !hasExactKeys(m, ["content", "role"])) {
      fail(`Cannot accept message ${i}: expected exactly the fields role and content`);
    }
    const { role, content } = m;
    if (typeof role !== "string" || typeof content !== "string") {
      fail(`Cannot accept message ${i}: role and content must be strings`);
    }
    const start = value[0]?.role === "system" ? 1 : 0;
    const expected = i === 0 && role === "system" ? "system" : (i - start) % 2 === 0 ? "user" : "assistant";
    if (role !== expected) {
      fail(`Cannot accept message ${i}: role is ${JSON.stringify(role)}, expected ${expected}`);
    }
    for (const s of reserved) {
      if (s.length > 0 && content.includes(s)) {
        fail(`Cannot accept message ${i}: content contains the reserved string ${s}`);
      }
    }
    if (!content.isWellFormed()) fail(`Cannot accept message ${i}: content has a lone surrogate`);
    bytes += utf8Length(content);
    messages.push({ role, content });
  });
  if (bytes > MAX_CONVERSATION_CONTENT_BYTES) {
    throw new ProtocolError(
      "too_large",
      `Cannot accept conversation: content is ${bytes} bytes, the bound is ${MAX_CONVERSATION_CONTENT_BYTES}`,
    );
  }
  if (!messages.some((m) => m.role === "user")) fail("Cannot accept conversation: it has no user message");
  const last = messages[messages.length - 1]!;
  if (options.generation && last.role !== "user") {
    fail(`Cannot accept conversation for generation: the last message is from ${last.role}, expected user`);
  }
  return messages;
}

/** The reserved strings of a codec: every special added token of its backend and its four special tokens. */
export function reservedStrings(codec: TextCodec): string[] {
  const t = codec.manifest.special_tokens;
  return [...new Set([...codec.specialStrings(), t.bos, t.eos, t.pad, t.unk])];
}

/** Validates a conversation for generation and returns its prompt ids (2–192 tokens, never truncated). */
export function encodePrompt(codec: TextCodec, value: unknown): number[] {
  const messages = validateConversation(value, reservedStrings(codec), { generation: true });
  const ids = codec.encode(codec.render(messages, true));
  if (ids.length < MIN_PROMPT_TOKENS || ids.length > MAX_PROMPT_TOKENS) {
    fail(
      `Cannot accept prompt: it is ${ids.length} tokens, expected ${MIN_PROMPT_TOKENS} to ${MAX_PROMPT_TOKENS}`,
    );
  }
  return ids;
}
